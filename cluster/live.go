package cluster

import (
	"context"
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/routing"
)

// LiveOptions say what ReadLive reads and how.
type LiveOptions struct {
	// UserAgent identifies the reader to the API server.
	UserAgent string
	// Timeout bounds the whole read (0: none but ctx's).
	Timeout time.Duration
	// Workloads also lists Pods, PodDisruptionBudgets, ReplicaSets, Deployments and
	// StatefulSets (what a plan reads for drain blockers).
	Workloads bool
	// Name names the cluster in the State's Sources (default: "the cluster at <host>").
	Name string
	// CompactNodes keeps of each node only the labels a decision on the stored drivers reads
	// (LabelKeys: the operator's, the drivers' selectors' keys and NodeLabels): for what
	// judges the cluster as stored (audit), never for what adds drivers to it, whose selectors
	// may read other labels. Without it a node keeps every label.
	CompactNodes bool
	// NodeLabels are the keys the policies declare (policy.Engine.NodeLabelKeys).
	NodeLabels []string
}

// LiveError is a cluster that could not be read: connecting to it, or listing Resource.
type LiveError struct {
	// Op is "connecting" or "listing".
	Op string
	// Resource is what was listed (Nodes, RBLNDrivers, ...); ListType the Go type of its list
	// (*v1.NodeList).
	Resource, ListType string
	Err                error
}

func (e *LiveError) Error() string {
	if e.Op == "connecting" {
		return "connecting: " + e.Err.Error()
	}
	return fmt.Sprintf("listing %s: %v", e.Resource, e.Err)
}

func (e *LiveError) Unwrap() error { return e.Err }

// RefusedError is an API server that answered and refused the reader: 401 Unauthorized (its
// credentials were not accepted) or 403 Forbidden (RBAC does not let it list). Unlike a
// cluster that does not answer, it is there: what it holds is not known, not absent.
type RefusedError struct {
	// Code is the HTTP status: 401 or 403.
	Code int
	Err  error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the API server answered %d %s: %v", e.Code, http.StatusText(e.Code), e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// refused wraps err in a RefusedError when the API server answered 401 or 403. client-go's
// discovery reads such an answer without its Status (its message is then "unknown"): the
// code is what says it.
func refused(err error) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return &RefusedError{Code: http.StatusUnauthorized, Err: err}
	case apierrors.IsForbidden(err):
		return &RefusedError{Code: http.StatusForbidden, Err: err}
	}
	return err
}

// ReadLive lists what a decision reads from the cluster of cfg — RBLNDrivers, Nodes (their
// names and the labels a decision reads, listed as metadata in pages: listNodes) and the
// RBLNClusterPolicy named rbln-cluster-policy — and, with o.Workloads, what a plan reads too;
// nothing else, and it writes nothing (list only). Without the CRDs the cluster holds no
// drivers and no cluster policy.
func ReadLive(ctx context.Context, cfg *rest.Config, o LiveOptions) (*State, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = o.UserAgent
	cfg.QPS, cfg.Burst = 50, 100
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, &LiveError{Op: "connecting", Err: refused(err)}
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	var (
		nodes    []routing.Node
		drivers  v1alpha1.RBLNDriverList
		policies v1alpha1.RBLNClusterPolicyList
		pods     corev1.PodList
		pdbs     policyv1.PodDisruptionBudgetList
		rss      appsv1.ReplicaSetList
		deploys  appsv1.DeploymentList
		stss     appsv1.StatefulSetList
	)
	type list struct {
		what string
		list client.ObjectList
	}
	lists := []list{{"RBLNDrivers", &drivers}, {"RBLNClusterPolicies", &policies}}
	if o.Workloads {
		lists = append(lists, list{"Pods", &pods}, list{"PodDisruptionBudgets", &pdbs}, list{"ReplicaSets", &rss},
			list{"Deployments", &deploys}, list{"StatefulSets", &stss})
	}
	for _, l := range lists {
		if err := c.List(ctx, l.list); err != nil {
			if meta.IsNoMatchError(err) {
				continue // the CRDs are not installed: no drivers, no cluster policy
			}
			return nil, &LiveError{Op: "listing", Resource: l.what, ListType: fmt.Sprintf("%T", l.list), Err: refused(err)}
		}
		if l.list == &drivers {
			// The nodes after the drivers: a node keeps the labels their selectors read.
			var keys *LabelKeys
			if o.CompactNodes {
				keys = NewLabelKeys(append(SelectorKeys(drivers.Items), o.NodeLabels...)...)
			}
			if nodes, err = listNodes(ctx, c, keys); err != nil {
				return nil, &LiveError{Op: "listing", Resource: "Nodes", ListType: "*v1.NodeList", Err: refused(err)}
			}
		}
	}
	s := &State{nodes: nodes, drivers: drivers.Items}
	for _, cp := range policies.Items {
		if cp.Name == v1alpha1.ClusterPolicyName {
			s.policies = []v1alpha1.RBLNClusterPolicy{cp}
		}
	}
	name := o.Name
	if name == "" {
		name = "the cluster at " + cfg.Host
	}
	src := Sources{Nodes: liveSource(name, len(s.nodes)), Drivers: liveSource(name, len(s.drivers)), ClusterPolicy: liveSource(name, len(s.policies))}
	if o.Workloads {
		s.workloads = &Workloads{Pods: pods.Items, PDBs: pdbs.Items, ReplicaSets: rss.Items, Deployments: deploys.Items, StatefulSets: stss.Items}
		src.Workloads = liveSource(name, len(pods.Items))
	}
	s.SetSources(src)
	return s, nil
}

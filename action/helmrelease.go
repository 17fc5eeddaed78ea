package action

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/render"
)

// DeployedRelease is what Plan reads of a release: its user-supplied values (as `helm get
// values` shows them) and its status.
type DeployedRelease struct {
	Name, Namespace string
	Revision        int
	// Status is Helm's status of the revision (deployed, failed, pending-upgrade, ...).
	Status string
	Values map[string]any
}

// Deployed reports whether the revision is deployed: its values are what the cluster runs.
func (d *DeployedRelease) Deployed() bool { return d.Status == string(helmrelease.StatusDeployed) }

// helmStorageDriver is the storage driver Helm's CLI uses: HELM_DRIVER, "secret" by default.
func helmStorageDriver() string {
	if d := os.Getenv("HELM_DRIVER"); d != "" {
		return d
	}
	return "secret"
}

// readRelease reads the latest revision of the release name through Helm's SDK, as `helm get
// values` does: from the target's namespace (else its context's, else "default") with the
// storage driver Helm uses.
func readRelease(ctx context.Context, name string, target cluster.Target) (*DeployedRelease, error) {
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return nil, fmt.Errorf("--release %q: %w", validation.Truncate(name, 80), err)
	}
	getter := genericclioptions.NewConfigFlags(false)
	if target.Kubeconfig != "" {
		getter.KubeConfig = &target.Kubeconfig
	}
	if target.Context != "" {
		getter.Context = &target.Context
	}
	ns := target.Namespace
	if ns == "" {
		if cfgNS, _, err := getter.ToRawKubeConfigLoader().Namespace(); err == nil && cfgNS != "" {
			ns = cfgNS
		} else {
			ns = "default"
		}
	}
	getter.Namespace = &ns
	timeout := 30 * time.Second
	getter.Timeout = new(string)
	*getter.Timeout = timeout.String()
	cfg := &helmaction.Configuration{}
	if err := cfg.Init(getter, ns, helmStorageDriver(), func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("reading release %s in namespace %s: %w", name, ns, err)
	}
	type result struct {
		rel *helmrelease.Release
		err error
	}
	done := make(chan result, 1)
	go func() { // Helm's storage takes no context: bounded here instead
		rel, err := helmaction.NewGet(cfg).Run(name)
		done <- result{rel, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(timeout):
		return nil, fmt.Errorf("reading release %s in namespace %s: no answer within %s", name, ns, timeout)
	}
	if r.err != nil {
		return nil, fmt.Errorf("reading release %s in namespace %s (storage driver %s): %w; `helm list -n %s` lists the releases there", name, ns, helmStorageDriver(), r.err, ns)
	}
	if r.rel.Chart == nil || r.rel.Chart.Metadata == nil || r.rel.Chart.Metadata.Name != "driverguard" {
		chartName := "no chart"
		if r.rel.Chart != nil && r.rel.Chart.Metadata != nil {
			chartName = "chart " + strconv.Quote(validation.Truncate(r.rel.Chart.Metadata.Name, 80))
		}
		return nil, fmt.Errorf("release %s in namespace %s is of %s, not driverguard's: its values are not driverguard's values", name, ns, chartName)
	}
	vals := r.rel.Config
	if vals == nil {
		vals = map[string]any{}
	}
	st := helmrelease.StatusUnknown
	if r.rel.Info != nil {
		st = r.rel.Info.Status
	}
	return &DeployedRelease{Name: name, Namespace: ns, Revision: r.rel.Version, Status: string(st), Values: vals}, nil
}

// renderDeployed renders the release's values with the embedded chart, as the deployed
// objects (the release's RBLNDrivers and RBLNClusterPolicy) — what `driverguard render -f
// <the values> --release-name NAME` prints.
func renderDeployed(ctx context.Context, d *DeployedRelease) (*render.Result, error) {
	ch, err := charts.Driverguard()
	if err != nil {
		return nil, fmt.Errorf("the embedded chart is broken: %w", err)
	}
	r, err := render.RenderContext(ctx, ch, d.Values, render.Options{ReleaseName: d.Name, SkipProvenance: true})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var invalid *render.InvalidValuesError
		if errors.As(err, &invalid) {
			return nil, fmt.Errorf("the values of release %s (revision %d) do not render with this driverguard's chart: %w", d.Name, d.Revision, err)
		}
		return nil, fmt.Errorf("rendering the values of release %s (revision %d): %w", d.Name, d.Revision, err)
	}
	return r, nil
}

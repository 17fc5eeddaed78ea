package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
)

const (
	// DefaultMaxManifestsBytes is beyond what Helm can store for a release (a Secret holds at
	// most 1 MiB of gzipped manifests, a few MiB of YAML) and keeps a worst case read well
	// under 300 MiB of memory.
	DefaultMaxManifestsBytes int64 = 32 << 20
	// DefaultLiveTimeout bounds reading the cluster for PostRender.
	DefaultLiveTimeout = 20 * time.Second

	// maxManifestValues bounds the values one rendered document may hold (counted before it is
	// parsed; a ConfigMap of 1 MiB, the API server's limit, holds far fewer), so that the
	// parse stays within a few hundred MiB whatever the input.
	maxManifestValues = 1_000_000

	// helmPostRenderFilename is the annotation Helm 4 adds to every document it sends a
	// post-renderer (to split the answer back into template files) and removes afterwards:
	// it never reaches the cluster, so the objects are judged without it.
	helmPostRenderFilename = "postrenderer.helm.sh/postrender-filename"

	// labelInstance is the release label the chart sets on every object.
	labelInstance = "app.kubernetes.io/instance"

	// maxAnswerError bounds the error of a cluster that did not answer, quoted in a message.
	maxAnswerError = 300
)

// LiveMode is whether PostRender reads the cluster: LiveAuto (when it answers, else the
// objects alone), LiveTrue (the cluster, or an error) or LiveFalse (never).
type LiveMode string

// The live modes.
const (
	LiveAuto  LiveMode = "auto"
	LiveTrue  LiveMode = "true"
	LiveFalse LiveMode = "false"
)

// PostRender is a Helm post-renderer's job (`driverguard post-render`): judge the
// RBLNClusterPolicy and RBLNDrivers of the manifests Helm rendered, in the order Helm applies
// them, with Check's decision.
type PostRender struct {
	cfg *Configuration
	Decision
	// ReleaseName is the release whose drivers no longer rendered are deleted (default: the
	// app.kubernetes.io/instance label of the rendered objects).
	ReleaseName string
	// Live says whether the objects are judged against the cluster of Target (Helm's
	// HELM_KUBECONTEXT as its default context), read within LiveTimeout.
	Live        LiveMode
	LiveTimeout time.Duration
	Target      cluster.Target
	// FailOnWarn fails on warnings too.
	FailOnWarn bool
	// MaxBytes bounds the manifests read from Stdin.
	MaxBytes int64
}

// NewPostRender returns a PostRender with the defaults of `driverguard post-render`.
func NewPostRender(cfg *Configuration) *PostRender {
	return &PostRender{cfg: cfg, Live: LiveAuto, LiveTimeout: DefaultLiveTimeout, MaxBytes: DefaultMaxManifestsBytes}
}

// PostRenderResult is the verdict on the rendered manifests.
type PostRenderResult struct {
	// Manifests are the manifests read, to pass on unchanged when Report passed.
	Manifests []byte
	Report    *CheckReport
	// Against says what the objects were judged against, for messages.
	Against string
}

// Run reads the manifests from Stdin and judges them.
func (p *PostRender) Run(ctx context.Context) (*PostRenderResult, error) {
	data, err := decode.ReadFile(ctx, "-", p.cfg.Stdin, p.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the rendered manifests: %w", withLimitHint(err, FlagMaxManifestsSize))
	}
	objs, err := renderedObjects(data, "the rendered manifests")
	if err != nil {
		return nil, err
	}
	objs.ReleaseName = p.ReleaseName
	if objs.ReleaseName == "" {
		objs.ReleaseName = releaseNameOf(objs)
	}
	res := &PostRenderResult{Manifests: data}
	if objs.ClusterPolicy == nil && len(objs.Drivers) == 0 {
		// Nothing driverguard judges: another chart's manifests pass through.
		res.Report, res.Against = &release.Report{Passed: true}, "nothing"
		return res, nil
	}
	st, against, err := p.cluster(ctx)
	if err != nil {
		return nil, err
	}
	engine, err := p.cfg.engine(ctx, p.Policy)
	if err != nil {
		return nil, err
	}
	j, err := p.apply(ctx, objs, &render.Result{}, st, engine)
	if err != nil {
		return nil, err
	}
	res.Report, res.Against = j.report(p.FailOnWarn), against
	return res, nil
}

// cluster reads the cluster state Live asks for; against names it for the messages.
func (p *PostRender) cluster(ctx context.Context) (st *cluster.State, against string, err error) {
	const alone = "the rendered objects alone"
	if p.Live == LiveFalse {
		return &cluster.State{}, alone + " (--live=false)", nil
	}
	// Only Helm runs a post-renderer, and Helm 3 runs it outside its plugin environment (and
	// Helm 4 without its own --kube-context): the variables Helm reads are read here too.
	target := p.Target.WithHelmEnv(os.Getenv)
	cfg, err := apiServerOf(target).restConfig("read", "driverguard-post-render", p.LiveTimeout)
	if err != nil {
		if p.Live == LiveTrue {
			return nil, "", fmt.Errorf("--live: %w", err)
		}
		return &cluster.State{}, alone + " (no cluster configured)", nil
	}
	name := target.Describe(cfg)
	st, err = cluster.ReadLive(ctx, cfg, cluster.LiveOptions{UserAgent: "driverguard-post-render", Timeout: p.LiveTimeout})
	var refusal *cluster.RefusedError
	if errors.As(err, &refusal) {
		// It answered: a cluster that is there and refuses is not one that does not answer.
		return nil, "", fmt.Errorf("--live %s: %s refused the reader: %w%s, or judge the rendered objects alone with --live false",
			p.Live, name, err, refusalHint(err))
	}
	if err != nil {
		if p.Live == LiveTrue {
			return nil, "", fmt.Errorf("--live: reading %s: %w", name, err)
		}
		return &cluster.State{}, fmt.Sprintf("%s (%s did not answer: %s)", alone, name, validation.Truncate(err.Error(), maxAnswerError)), nil
	}
	return st, name, nil
}

// renderedObjects are the RBLNClusterPolicy and the RBLNDrivers of Helm's rendered manifests, in
// their order (Helm's install order, which the post-renderer receives), without the annotation
// Helm 4 adds for the post-renderer only.
func renderedObjects(data []byte, source string) (release.Objects, error) {
	docs, err := renderedDocuments(data, source)
	if err != nil {
		return release.Objects{}, err
	}
	return objectsOf(docs, source)
}

// renderedDocuments are the documents of a manifest stream, its values counted first.
func renderedDocuments(data []byte, source string) ([]decode.Document, error) {
	if err := decode.CheckDocumentValues(data, source, maxManifestValues); err != nil {
		return nil, err
	}
	return decode.Documents(bytes.NewReader(data), source)
}

// objectsOf are the RBLNDrivers and the RBLNClusterPolicy among docs (the others skipped).
func objectsOf(docs []decode.Document, source string) (release.Objects, error) {
	var objs release.Objects
	drivers, err := decode.Drivers(docs)
	if err != nil {
		return objs, err
	}
	policies, err := decode.ClusterPolicies(docs)
	if err != nil {
		return objs, err
	}
	if len(policies) > 1 {
		return objs, fmt.Errorf("%s hold %d RBLNClusterPolicies; a release renders at most one (%s)", source, len(policies), v1alpha1.ClusterPolicyName)
	}
	for i := range drivers {
		delete(drivers[i].Annotations, helmPostRenderFilename)
		if len(drivers[i].Annotations) == 0 {
			drivers[i].Annotations = nil
		}
	}
	objs.Drivers = drivers
	// What Helm sends the API server is what its CRD validation judges, wrong types and all
	// (the typed objects above read a number where a string belongs as that string).
	objs.Raw = map[string][]byte{}
	for i, d := range decode.OnlyKind(docs, "RBLNDriver") {
		objs.Raw[release.RawKey(d.Kind, drivers[i].Name)] = d.Data
	}
	for _, d := range decode.OnlyKind(docs, "RBLNClusterPolicy") {
		objs.Raw[release.RawKey(d.Kind, policies[0].Name)] = d.Data
	}
	if len(policies) == 1 {
		objs.ClusterPolicy = &policies[0]
		delete(objs.ClusterPolicy.Annotations, helmPostRenderFilename)
		if len(objs.ClusterPolicy.Annotations) == 0 {
			objs.ClusterPolicy.Annotations = nil
		}
	}
	return objs, nil
}

// releaseNameOf is the release the objects carry in their app.kubernetes.io/instance label.
func releaseNameOf(objs release.Objects) string {
	if objs.ClusterPolicy != nil && objs.ClusterPolicy.Labels[labelInstance] != "" {
		return objs.ClusterPolicy.Labels[labelInstance]
	}
	for _, d := range objs.Drivers {
		if name := d.Labels[labelInstance]; name != "" {
			return name
		}
	}
	return ""
}

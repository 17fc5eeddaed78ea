package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
)

const (
	// flagMaxManifestsSize bounds the rendered manifests post-render reads.
	flagMaxManifestsSize = "max-manifests-size"
	// defaultMaxManifestsBytes is beyond what Helm can store for a release (a Secret holds at
	// most 1 MiB of gzipped manifests, a few MiB of YAML) and keeps a worst case read well
	// under 300 MiB of memory.
	defaultMaxManifestsBytes int64 = 32 << 20

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

// liveMode is post-render's --live: auto (the cluster when it answers, else the objects
// alone), true (the cluster, or exit 2) or false (never the cluster).
type liveMode string

const (
	liveAuto  liveMode = "auto"
	liveTrue  liveMode = "true"
	liveFalse liveMode = "false"
)

func (m *liveMode) String() string { return string(*m) }
func (m *liveMode) Type() string   { return "auto|true|false" }

func (m *liveMode) Set(s string) error {
	switch liveMode(s) {
	case liveAuto, liveTrue, liveFalse:
		*m = liveMode(s)
		return nil
	}
	return fmt.Errorf("%q is not auto, true or false", truncateValue(s))
}

type postRenderOptions struct {
	judgeFlags
	kube         kubeTarget
	live         liveMode
	liveTimeout  time.Duration
	failOnWarn   bool
	maxSize      sizeValue
	parentStderr bool
}

func newPostRenderCommand(s Streams) *cobra.Command {
	o := &postRenderOptions{live: liveAuto, liveTimeout: defaultLiveTimeout, maxSize: sizeValue(defaultMaxManifestsBytes)}
	cmd := &cobra.Command{
		Use:   "post-render [--live auto|true|false] [--policy DIR] [--allow-driver-loss] < manifests.yaml",
		Short: "Helm post-renderer: judge the rendered RBLNDrivers and RBLNClusterPolicy with check's decision; pass the manifests through unchanged",
		Long: `post-render is a Helm post-renderer. It reads the manifests Helm rendered on standard input,
judges their RBLNClusterPolicy and RBLNDrivers in the order Helm applies them with the decision
'check' and the admission webhook make (the built-in rules, selector conflicts, the OPA policies
of --policy), and then:

  - when every object passes, writes standard input to standard output byte for byte;
  - on a denial (or a node that would lose its driver, without --allow-driver-loss), writes
    the findings to standard error, nothing to standard output, and exits 1: Helm stops
    before anything reaches the cluster.

With --live auto (the default) the objects are judged against the cluster when it answers —
its Nodes, RBLNDrivers and RBLNClusterPolicy, read (list only) through the kubeconfig as kubectl
reads it — and on the objects alone otherwise (two rendered RBLNDrivers with identical selectors
are denied, possible ties warn). --live true requires the cluster (exit 2 when it does not
answer), --live false never reads it. HELM_KUBECONTEXT is the default of --kube-context, as for
Helm, and KUBECONFIG is read as usual; Helm passes a post-renderer neither its --kube-context nor
its --kubeconfig (give them with --post-renderer-args, or set the variables). The drivers
the release owns and no longer renders are deleted: the release is the app.kubernetes.io/instance
label of the rendered objects, or --release-name.

Helm 4: helm install|upgrade|template --post-renderer driverguard-check (the plugin runs
'driverguard post-render'; --post-renderer-args passes flags). Helm 3: --post-renderer
PATH/TO/driverguard --post-renderer-args post-render.

Exit codes: 0 passed (the manifests are on standard output); 1 a denial, an unacknowledged
driver loss or (with --fail-on-warn) a warning; 2 unusable input: manifests that are not YAML or
larger than --max-manifests-size, a policy that does not compile, no cluster with --live true.`,
		Example: `  helm template driverguard charts/driverguard -f values.yaml | driverguard post-render > manifests.yaml
  # Helm 4, with the driverguard-check plugin
  helm install driverguard charts/driverguard -f values.yaml --post-renderer driverguard-check
  # Helm 3, with the binary of the driverguard plugin
  helm install driverguard charts/driverguard -f values.yaml \
    --post-renderer "$(helm env HELM_PLUGINS)/driverguard/bin/driverguard" --post-renderer-args post-render`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), s)
		},
	}
	f := cmd.Flags()
	o.judgeFlags.addDecisionFlags(f)
	f.StringVar(&o.releaseName, "release-name", "", "the Helm release, whose drivers no longer rendered are deleted (default: the app.kubernetes.io/instance label of the rendered objects)")
	f.Var(&o.live, "live", "judge against the cluster: auto (when it answers), true (required) or false (the objects alone)")
	f.Lookup("live").NoOptDefVal = string(liveTrue)
	f.DurationVar(&o.liveTimeout, "live-timeout", defaultLiveTimeout, "how long reading the cluster may take")
	f.StringVar(&o.kube.kubeconfig, "kubeconfig", "", "kubeconfig file (default: KUBECONFIG, else ~/.kube/config, else the in-cluster config)")
	f.StringVar(&o.kube.context, "kube-context", "", "kubeconfig context (default: HELM_KUBECONTEXT, else the current context)")
	f.BoolVar(&o.failOnWarn, "fail-on-warn", false, "fail on warnings too (object and policy warnings)")
	f.Var(&o.maxSize, flagMaxManifestsSize, "the largest input read, in bytes or as a quantity (32Mi, 1Gi)")
	// Helm 4 (4.3.1) never shows a post-renderer plugin's standard error: the driverguard-check
	// plugin passes this flag so that a denial reaches the user (see writeParentStderr).
	f.BoolVar(&o.parentStderr, "parent-stderr", false, "also write a denial to the standard error of the process that started post-render (Helm 4 discards a post-renderer plugin's own)")
	_ = f.MarkHidden("parent-stderr")
	return cmd
}

func (o *postRenderOptions) run(ctx context.Context, s Streams) error {
	data, err := decode.ReadFile(ctx, "-", s.In, int64(o.maxSize))
	if err != nil {
		return usageError(fmt.Errorf("reading the rendered manifests: %w", withLimitHint(err, flagMaxManifestsSize)))
	}
	objs, err := renderedObjects(data)
	if err != nil {
		return usageError(err)
	}
	if o.releaseName == "" {
		o.releaseName = releaseNameOf(objs)
	}
	objs.ReleaseName = o.releaseName
	rep, against, err := o.judgeRendered(ctx, s, objs)
	if err != nil {
		return err
	}
	if !rep.Passed {
		var msg bytes.Buffer
		fmt.Fprintf(&msg, "driverguard post-render: the rendered objects fail the check, judged against %s; nothing was applied\n\n", against)
		if err := printCheck(&msg, rep); err != nil {
			return err
		}
		if o.parentStderr {
			writeParentStderr(msg.Bytes())
		}
		if _, err := s.Err.Write(msg.Bytes()); err != nil {
			return err
		}
		return invalidError(errSilent)
	}
	if _, err := s.Out.Write(data); err != nil {
		return fmt.Errorf("writing the manifests: %w", err)
	}
	if len(rep.Resources) > 0 {
		fmt.Fprintf(s.Err, "driverguard post-render: %d resources passed (%s), judged against %s\n", len(rep.Resources), plural(rep.Warnings, "warning"), against)
	}
	return nil
}

// judgeRendered judges objs as check does, against the cluster --live selects; against says
// what they were judged against.
func (o *postRenderOptions) judgeRendered(ctx context.Context, s Streams, objs release.Objects) (rep *release.Report, against string, err error) {
	if objs.ClusterPolicy == nil && len(objs.Drivers) == 0 {
		// Nothing driverguard judges: another chart's manifests pass through.
		return &release.Report{Passed: true}, "nothing", nil
	}
	cl, against, err := o.cluster(ctx)
	if err != nil {
		return nil, "", err
	}
	engine, err := o.policy.engine(ctx, s)
	if err != nil {
		return nil, "", err
	}
	j, err := o.judgeObjects(ctx, objs, &render.Result{}, cl, engine, release.Options{})
	if err != nil {
		return nil, "", err
	}
	return j.report(o.failOnWarn), against, nil
}

// cluster reads the cluster state --live asks for; against names it for the messages.
func (o *postRenderOptions) cluster(ctx context.Context) (cl release.Cluster, against string, err error) {
	const alone = "the rendered objects alone"
	if o.live == liveFalse {
		return cl, alone + " (--live=false)", nil
	}
	// Only Helm runs a post-renderer, and Helm 3 runs it outside its plugin environment (and
	// Helm 4 without its own --kube-context): the variables Helm reads are read here too.
	target := o.kube.withHelmEnv(os.Getenv)
	cfg, err := target.clientConfig().ClientConfig()
	if err != nil {
		if o.live == liveTrue {
			return cl, "", usageError(fmt.Errorf("--live: no cluster to read (--kubeconfig, KUBECONFIG, ~/.kube/config or the in-cluster config): %w", err))
		}
		return cl, alone + " (no cluster configured)", nil
	}
	cfg.Timeout = o.liveTimeout
	ctx, cancel := context.WithTimeout(ctx, o.liveTimeout)
	defer cancel()
	name := target.describe(cfg)
	cl, err = readClusterState(ctx, cfg, "driverguard-post-render")
	if err != nil {
		if o.live == liveTrue {
			return cl, "", usageError(fmt.Errorf("--live: reading %s: %w", name, err))
		}
		return release.Cluster{}, fmt.Sprintf("%s (%s did not answer: %s)", alone, name, validation.Truncate(err.Error(), maxAnswerError)), nil
	}
	return cl, name, nil
}

// renderedObjects are the RBLNClusterPolicy and the RBLNDrivers of Helm's rendered manifests, in
// their order (Helm's install order, which the post-renderer receives), without the annotation
// Helm 4 adds for the post-renderer only.
func renderedObjects(data []byte) (release.Objects, error) {
	var objs release.Objects
	if err := decode.CheckDocumentValues(data, "the rendered manifests", maxManifestValues); err != nil {
		return objs, err
	}
	docs, err := decode.Documents(bytes.NewReader(data), "the rendered manifests")
	if err != nil {
		return objs, err
	}
	drivers, err := decode.Drivers(docs)
	if err != nil {
		return objs, err
	}
	policies, err := decode.ClusterPolicies(docs)
	if err != nil {
		return objs, err
	}
	if len(policies) > 1 {
		return objs, fmt.Errorf("the rendered manifests hold %d RBLNClusterPolicies; a release renders at most one (%s)", len(policies), v1alpha1.ClusterPolicyName)
	}
	for i := range drivers {
		delete(drivers[i].Annotations, helmPostRenderFilename)
		if len(drivers[i].Annotations) == 0 {
			drivers[i].Annotations = nil
		}
	}
	objs.Drivers = drivers
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

// writeParentStderr writes msg to the standard error of the process that started this one,
// when it is a terminal or a pipe and not this process's own standard error. Helm 4's
// subprocess runtime collects a post-renderer plugin's standard error and never prints it
// (internal/plugin runtime_subprocess.go: only "plugin ... exited with error" is shown), so a
// denial would reach nobody. Best effort: any failure is ignored.
func writeParentStderr(msg []byte) {
	w, err := openParentStderr()
	if err != nil {
		return
	}
	defer w.Close()
	_, _ = w.Write(msg)
}

// errNoParentStderr: the parent's standard error cannot be written safely.
var errNoParentStderr = errors.New("no separate standard error of the parent process")

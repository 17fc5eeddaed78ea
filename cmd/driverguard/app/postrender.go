package app

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/output"
)

// liveFlag is post-render's --live: auto (the cluster when it answers, else the objects
// alone), true (the cluster, or exit 2) or false (never the cluster).
type liveFlag struct{ mode *action.LiveMode }

func (m liveFlag) String() string { return string(*m.mode) }
func (m liveFlag) Type() string   { return "auto|true|false" }

func (m liveFlag) Set(s string) error {
	switch action.LiveMode(s) {
	case action.LiveAuto, action.LiveTrue, action.LiveFalse:
		*m.mode = action.LiveMode(s)
		return nil
	}
	return fmt.Errorf("%q is not auto, true or false", truncateValue(s))
}

// postRenderOptions are the flags of post-render that are not the job's.
type postRenderOptions struct {
	parentStderr bool
}

func newPostRenderCommand(s Streams) *cobra.Command {
	job := action.NewPostRender(s.cfg)
	o := &postRenderOptions{}
	cmd := &cobra.Command{
		Use:   "post-render [--live auto|true|false] [--policy DIR] [--allow-driver-loss] < manifests.yaml",
		Short: "Helm post-renderer: judge the rendered RBLNDrivers and RBLNClusterPolicy with check's decision; pass the manifests through unchanged",
		Long: `post-render is a Helm post-renderer. It reads the manifests Helm rendered on standard input,
judges their RBLNClusterPolicy and RBLNDrivers in the order Helm applies them with the decision
'check' and the admission webhook make (the built-in rules, selector conflicts, the OPA policies
of --policy), and then:

  - when every object passes, writes standard input to standard output byte for byte (manifests
    without an RBLNDriver or RBLNClusterPolicy too, saying on standard error that nothing was
    judged);
  - on a denial (or a node that would lose its driver, without --allow-driver-loss), writes
    the findings to standard error, nothing to standard output, and exits 1: Helm stops
    before anything reaches the cluster.

With --live auto (the default) the objects are judged against the cluster when it answers —
its Nodes, RBLNDrivers and RBLNClusterPolicy, read (list only) through the kubeconfig as kubectl
reads it — and on the objects alone when no cluster is configured or it does not answer (two
rendered RBLNDrivers with identical selectors are denied, possible ties warn). A cluster that
answers 401 Unauthorized or 403 Forbidden refuses the reader: exit 2, naming the credentials or
RBAC to fix (or --live false). --live true requires the cluster (exit 2 when it does not
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
larger than --max-manifests-size, a policy that does not compile, no cluster with --live true, a
cluster that refuses the reader (401, 403).`,
		Example: `  helm template driverguard charts/driverguard -f values.yaml | driverguard post-render > manifests.yaml
  # Helm 4, with the driverguard-check plugin
  helm install driverguard charts/driverguard -f values.yaml --post-renderer driverguard-check
  # Helm 3, with the binary of the driverguard plugin
  helm install driverguard charts/driverguard -f values.yaml \
    --post-renderer "$(helm env HELM_PLUGINS)/driverguard/bin/driverguard" --post-renderer-args post-render`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			return o.print(s, res)
		},
	}
	f := cmd.Flags()
	addDecisionFlags(f, &job.Decision)
	f.StringVar(&job.ReleaseName, "release-name", "", "the Helm release, whose drivers no longer rendered are deleted (default: the app.kubernetes.io/instance label of the rendered objects)")
	f.Var(liveFlag{&job.Live}, "live", "judge against the cluster: auto (when it answers), true (required) or false (the objects alone)")
	f.Lookup("live").NoOptDefVal = string(action.LiveTrue)
	durationVar(f, &job.LiveTimeout, "live-timeout", action.DefaultLiveTimeout, liveTimeoutRange, "how long reading the cluster may take")
	f.StringVar(&job.Target.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: KUBECONFIG, else ~/.kube/config, else the in-cluster config)")
	f.StringVar(&job.Target.Context, "kube-context", "", "kubeconfig context (default: HELM_KUBECONTEXT, else the current context)")
	f.BoolVar(&job.FailOnWarn, "fail-on-warn", false, "fail on warnings too (object and policy warnings)")
	f.Var((*sizeValue)(&job.MaxBytes), action.FlagMaxManifestsSize, "the largest input read, in bytes or as a quantity (32Mi, 1Gi)")
	// Helm 4 (4.3.1) never shows a post-renderer plugin's standard error: the driverguard-check
	// plugin passes this flag so that a denial reaches the user (see WriteParentStderr).
	f.BoolVar(&o.parentStderr, "parent-stderr", false, "also write a denial to the standard error of the process that started post-render (Helm 4 discards a post-renderer plugin's own)")
	_ = f.MarkHidden("parent-stderr")
	return cmd
}

// liveTimeoutRange: reading Nodes, RBLNDrivers and the cluster policy takes a few round trips;
// below 1s a healthy but distant API server does not answer in time (and --live auto judges
// the objects alone). 0 is refused: without a deadline an API server that accepts the
// connection and never answers holds the Helm command indefinitely; above 5m Helm's own
// --timeout (default 5m) has passed.
var liveTimeoutRange = durationRange{min: time.Second, max: 5 * time.Minute,
	low: "a healthy API server may not answer in time"}

// print passes the manifests through when they passed, and otherwise explains the denial on
// standard error (and the parent's, with --parent-stderr).
func (o *postRenderOptions) print(s Streams, res *action.PostRenderResult) error {
	rep := res.Report
	if !rep.Passed {
		var msg bytes.Buffer
		fmt.Fprintf(&msg, "driverguard post-render: the rendered objects fail the check, judged against %s; nothing was applied\n\n", output.Escape(res.Against))
		if err := output.CheckTable(&msg, rep); err != nil {
			return err
		}
		if o.parentStderr {
			s.parentStderr(msg.Bytes())
		}
		if _, err := s.Err.Write(msg.Bytes()); err != nil {
			return err
		}
		return invalidError(errSilent)
	}
	if _, err := s.Out.Write(res.Manifests); err != nil {
		return fmt.Errorf("writing the manifests: %w", err)
	}
	if len(rep.Resources) == 0 {
		// Silence would read as a pass; like a warning, it reaches the user past Helm.
		msg := []byte("driverguard post-render: no RBLNDriver or RBLNClusterPolicy in the manifests: nothing was judged (they pass through unchanged)\n")
		if _, err := s.Err.Write(msg); err != nil {
			return err
		}
		s.parentStderr(msg)
		return nil
	}
	msg := output.PostRenderPass(rep, res.Against)
	if _, err := s.Err.Write(msg); err != nil {
		return err
	}
	if rep.Warnings+rep.Audited > 0 {
		// Helm 3 and Helm 4 both discard the standard error of a post-renderer that succeeds:
		// the warnings would reach nobody.
		s.parentStderr(msg)
	}
	return nil
}

// WriteParentStderr writes msg to the standard error of the process that started this one,
// when it is a terminal or a pipe and not this process's own standard error. Helm 4's
// subprocess runtime collects a post-renderer plugin's standard error and never prints it
// (internal/plugin runtime_subprocess.go: only "plugin ... exited with error" is shown), so a
// denial would reach nobody. Best effort: any failure is ignored.
func WriteParentStderr(msg []byte) {
	w, err := openParentStderr()
	if err != nil {
		return
	}
	defer w.Close()
	_, _ = w.Write(msg)
}

// errNoParentStderr: the parent's standard error cannot be written safely.
var errNoParentStderr = errors.New("no separate standard error of the parent process")

package app

import (
	"errors"
	"time"

	"github.com/spf13/pflag"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/cluster"
)

// addValuesFlags adds Helm's value flags and --release-name (render, preview, check, plan,
// policy input and data).
func addValuesFlags(fs *pflag.FlagSet, v *action.RenderOptions) {
	fs.StringArrayVarP(&v.ValueFiles, "values", "f", nil, "values file (can repeat; later files win), as for helm template")
	fs.StringArrayVar(&v.Values, "set", nil, "set a value on the command line (can repeat or be comma-separated: key1=val1,key2=val2)")
	fs.StringArrayVar(&v.StringValues, "set-string", nil, "set a STRING value on the command line")
	fs.StringArrayVar(&v.JSONValues, "set-json", nil, "set a JSON value on the command line")
	fs.StringArrayVar(&v.FileValues, "set-file", nil, "set a value from a file (key=path)")
	fs.StringVar(&v.ReleaseName, "release-name", action.DefaultReleaseName, "Helm release name used for the app.kubernetes.io/instance label")
}

// addClusterFlags adds the cluster a release is judged against (check, preview, plan, policy
// input and data): the node inventory and, for an upgrade, the current drivers and policy.
func addClusterFlags(fs *pflag.FlagSet, f *cluster.Files) {
	fs.StringVar(&f.Nodes, "nodes", "", "node inventory: 'kubectl get nodes -o yaml' output or a Node stream ('-' for stdin); without it conflicts are judged on the selectors alone")
	fs.StringVar(&f.Drivers, "drivers", "", "the RBLNDrivers in the cluster now ('kubectl get rblndrivers -o yaml'): rendered drivers of the same name are judged as UPDATEs, and those the release owns and no longer renders are deleted")
	fs.StringVar(&f.ClusterPolicy, "cluster-policy", "", "the RBLNClusterPolicy in the cluster now ('kubectl get rblnclusterpolicies -o yaml')")
}

// addJudgeFlags adds the inputs of a release judged as the webhook would (check, preview,
// plan, policy input and data): the values, the cluster and the decision.
func addJudgeFlags(fs *pflag.FlagSet, j *action.Judge) {
	addValuesFlags(fs, &j.RenderOptions)
	addClusterFlags(fs, &j.Cluster)
	addDecisionFlags(fs, &j.Decision)
}

// addDecisionFlags adds the flags of the decision alone (the policies, --policy-fail-open,
// --allow-driver-loss), without the values and the cluster files: post-render judges objects
// Helm rendered.
func addDecisionFlags(fs *pflag.FlagSet, d *action.Decision) {
	addPolicyFlags(fs, &d.Policy, "policy")
	fs.BoolVar(&d.PolicyFailOpen, "policy-fail-open", false, "judge an object whose policy evaluation fails without its policies (with a warning), as serve --policy-fail-open admits it")
	fs.BoolVar(&d.AllowDriverLoss, "allow-driver-loss", false, "acknowledge the nodes that would lose their driver: report them as warnings instead of failing")
}

// addPolicyFlags adds --<dirFlag> (repeatable), --disable, --enforcement and --policy-timeout.
func addPolicyFlags(fs *pflag.FlagSet, p *action.Policy, dirFlag string) {
	fs.StringArrayVar(&p.Dirs, dirFlag, nil, "directory of Rego policies (packages under driverguard.) and data documents, or one such file, evaluated with the bundled library (can repeat)")
	fs.StringArrayVar(&p.Disable, "disable", nil, "turn off a policy by name, e.g. lib.max_parallel_upgrades (can repeat; 'driverguard policy list' shows the names)")
	fs.Var((*enforcementFlag)(&p.Enforcement), "enforcement", "what a policy's messages do, by name: NAME=deny|warn|audit, e.g. team.new_rule=audit to trial a rule (sets every rule of the package, whatever its METADATA custom.enforcement says; can repeat)")
	durationVar(fs, &p.Timeout, "policy-timeout", action.DefaultPolicyTimeout, policyTimeoutRange, "deadline of one policy evaluation (every policy on one object)")
}

// policyTimeoutRange: the bundled library judges an object in well under a millisecond, a
// large policy set in a few; below 10ms an evaluation on a loaded node misses its deadline and
// the object is not judged (serve refuses it, fail-closed). Above a minute the API server
// (at most 30s a call) and any CI job have long given up.
var policyTimeoutRange = durationRange{min: 10 * time.Millisecond, max: time.Minute,
	low: "policy evaluations miss their deadline and objects go unjudged (serve refuses every write fail-closed)"}

// imageTimeoutRange: one check is a token exchange and a HEAD; below 100ms no registry
// answers and every image is only a timeout warning; above 5m a dead registry stalls the run.
var imageTimeoutRange = durationRange{min: 100 * time.Millisecond, max: 5 * time.Minute,
	low: "no registry answers in time and every image check ends in a timeout warning"}

// addImageFlags adds --check-images (described by what) and --image-timeout (by timeout).
func addImageFlags(fs *pflag.FlagSet, c *action.RegistryCheck, live bool, what, timeoutWhat string) {
	fs.BoolVar(&c.CheckImages, "check-images", false, what)
	durationVar(fs, &c.ImageTimeout, "image-timeout", 10*time.Second, imageTimeoutRange, timeoutWhat)
	credentials := "with files: Helm's registry config, then the Docker config ($DOCKER_CONFIG or ~/.docker/config.json, credential helpers included)"
	if live {
		credentials += "; read live: each RBLNDriver's spec.imagePullSecrets in --pull-secret-namespace"
	}
	fs.Var((*fileFlag)(&c.RegistryConfig), "registry-config", "a Docker-config-format file of registry credentials for --check-images, instead of Helm's registry config (default credentials "+credentials+")")
	fs.StringSliceVar(&c.InsecureRegistries, "insecure-registry", nil, "a registry (host:port, or a host for any port) --check-images may ask over plain HTTP; loopback always may, every other registry is asked over HTTPS only (repeatable)")
	if live {
		fs.StringVar(&c.PullSecretNamespace, "pull-secret-namespace", "", "with --live and --check-images, the namespace the driver DaemonSets run in, where the drivers' spec.imagePullSecrets are read (get only; default: the kubeconfig context's namespace)")
	}
}

// addLiveFlags adds --live, --kubeconfig and --kube-context: reading the cluster instead of
// files (check, preview, plan, audit). what lists what is read.
func addLiveFlags(fs *pflag.FlagSet, l *action.Live, what string) {
	fs.BoolVar(&l.Live, "live", false, "read the cluster (in-cluster config or KUBECONFIG) instead of files: "+what+" (list only, nothing is written)")
	fs.StringVar(&l.Target.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to read (implies --live)")
	fs.StringVar(&l.Target.Context, "kube-context", "", "kubeconfig context to read (default: the current context; as a Helm plugin, Helm's --kube-context)")
}

// fileFlag is a flag that names a file: given, it may not be empty (`--registry-config=`
// would otherwise mean "not given" and fall back to other files without a word).
type fileFlag string

func (f *fileFlag) String() string { return string(*f) }
func (f *fileFlag) Type() string   { return "file" }
func (f *fileFlag) Set(s string) error {
	if s == "" {
		return errors.New("needs a file: leave the flag out for the default")
	}
	*f = fileFlag(s)
	return nil
}

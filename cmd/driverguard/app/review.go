package app

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/webhook"
)

type reviewOptions struct {
	file              string
	driversFile       string
	nodesFile         string
	clusterPolicyFile string
	// webhook configures the decisions; the policy flags set its Policy.
	webhook webhook.Options
	policy  policyFlags
}

func newReviewCommand(s Streams) *cobra.Command {
	o := &reviewOptions{}
	cmd := &cobra.Command{
		Use:   "review -f admissionreview.json [--drivers drivers.yaml] [--nodes nodes.yaml] [--cluster-policy cp.yaml] [--policy DIR]",
		Short: "Answer one AdmissionReview offline, exactly as the webhook would",
		Long: `review answers one AdmissionReview (admission.k8s.io/v1, JSON) for an RBLNDriver, an
RBLNClusterPolicy or a driver DaemonSet through the same handler 'driverguard serve' runs, with
the cluster state read from files instead of informer caches. Use it to replay a real request
or to try a change before applying it.

--drivers takes RBLNDriver documents (e.g. the output of 'driverguard render' or 'kubectl get
rblndrivers -o yaml'), --nodes 'kubectl get nodes -o yaml' output or a Node stream,
--cluster-policy RBLNClusterPolicy documents; each is optional (absent means none).

RBLNDriver and RBLNClusterPolicy requests are evaluated by the bundled policy library plus every
--policy directory, as 'serve --policy-dir' does; a policy that fails to evaluate refuses the
request unless --policy-fail-open is set.

The AdmissionReview is printed with its response as JSON. Exit code: 0 allowed, 1 denied,
2 unusable input (unreadable files, not an AdmissionReview, or a request the webhook cannot
decode — the review is still printed then).`,
		Example: `  kubectl get rblndrivers -o yaml > drivers.yaml
  kubectl get nodes -o yaml > nodes.yaml
  driverguard review -f request.json --drivers drivers.yaml --nodes nodes.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.file == "" {
				return usageError(errors.New("-f is required: the AdmissionReview JSON file ('-' for stdin)"))
			}
			stdin := 0
			for _, f := range []string{o.file, o.driversFile, o.nodesFile, o.clusterPolicyFile} {
				if f == "-" {
					stdin++
				}
			}
			if stdin > 1 {
				return usageError(errors.New("only one of -f, --drivers, --nodes and --cluster-policy can read standard input"))
			}
			body, err := readAll(o.file, s.In)
			if err != nil {
				return usageError(fmt.Errorf("reading the AdmissionReview: %w", err))
			}
			state, err := o.state(s)
			if err != nil {
				return err
			}
			engine, err := o.policy.engine(cmd.Context())
			if err != nil {
				return err
			}
			o.webhook.Policy, o.webhook.PolicyTimeout = engine, o.policy.timeout
			review, err := webhook.New(state, o.webhook).Review(cmd.Context(), body)
			if err != nil {
				return usageError(fmt.Errorf("%s: %w", o.file, err))
			}
			if err := writeJSON(s.Out, review); err != nil {
				return err
			}
			switch resp := review.Response; {
			case resp.Allowed:
				return nil
			case resp.Result != nil && resp.Result.Code == http.StatusBadRequest:
				return &exitError{code: ExitUsage, err: errSilent}
			default:
				return &exitError{code: ExitInvalid, err: errSilent}
			}
		},
	}
	cmd.Flags().StringVarP(&o.file, "filename", "f", "", "AdmissionReview JSON ('-' for stdin)")
	cmd.Flags().StringVar(&o.driversFile, "drivers", "", "RBLNDrivers in the cluster ('-' for stdin)")
	cmd.Flags().StringVar(&o.nodesFile, "nodes", "", "nodes in the cluster: 'kubectl get nodes -o yaml' output or a Node stream ('-' for stdin)")
	cmd.Flags().StringVar(&o.clusterPolicyFile, "cluster-policy", "", "the RBLNClusterPolicy ('-' for stdin)")
	o.policy.addFlags(cmd.Flags(), "policy")
	cmd.Flags().BoolVar(&o.webhook.PolicyFailOpen, "policy-fail-open", false, "admit (with a warning) a request whose policy evaluation fails, as serve --policy-fail-open does")
	return cmd
}

// state reads the cluster state files; each is optional.
func (o *reviewOptions) state(s Streams) (webhook.State, error) {
	var (
		drivers []v1alpha1.RBLNDriver
		nodes   []routing.Node
		cps     []v1alpha1.RBLNClusterPolicy
		err     error
	)
	if o.driversFile != "" {
		if drivers, err = readDrivers(o.driversFile, s); err != nil {
			return nil, err
		}
	}
	if o.nodesFile != "" {
		if nodes, err = readNodes(o.nodesFile, s); err != nil {
			return nil, err
		}
	}
	if o.clusterPolicyFile != "" {
		docs, err := decode.File(o.clusterPolicyFile, s.In)
		if err == nil {
			cps, err = decode.ClusterPolicies(docs)
		}
		if err != nil {
			return nil, usageError(fmt.Errorf("reading the cluster policy: %w", err))
		}
	}
	return webhook.NewStaticState(drivers, nodes, cps), nil
}

func readAll(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/cobra"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/webhook"
)

type reviewOptions struct {
	file    string
	cluster clusterFlags
	// webhook configures the decisions; the policy flags set its Policy.
	webhook webhook.Options
	policy  policyFlags
	output  outputFlag
}

func newReviewCommand(s Streams) *cobra.Command {
	o := &reviewOptions{output: newOutput(formatJSON, formatJSON, formatYAML, formatTable)}
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

The AdmissionReview is printed with its response (-o json, the default, or yaml; -o table
summarises the verdict, its causes, warnings and patch). Exit code: 0 allowed, 1 denied, 2
unusable input or no decision (unreadable files, not an AdmissionReview, a request the webhook
cannot read — malformed or larger than the webhook's 7 MiB limit — or a policy evaluation that
failed while fail-closed; the review is still printed then, but for a file over 7 MiB, which is
not read past the limit).`,
		Example: `  kubectl get rblndrivers -o yaml > drivers.yaml
  kubectl get nodes -o yaml > nodes.yaml
  driverguard review -f request.json --drivers drivers.yaml --nodes nodes.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.file == "" {
				return usageError(errors.New("-f is required: the AdmissionReview JSON file ('-' for stdin)"))
			}
			if err := oneStdin(append(o.cluster.stdinUsers(), stdinUser{"-f", o.file})...); err != nil {
				return err
			}
			ctx := cmd.Context()
			body, err := decode.ReadFile(ctx, o.file, s.In, reviewLimit)
			if tl := (*decode.TooLargeError)(nil); errors.As(err, &tl) {
				return usageError(fmt.Errorf("%w, the webhook's: it would refuse the request (413) unread", err))
			}
			if err != nil {
				return usageError(fmt.Errorf("reading the AdmissionReview: %w", err))
			}
			state, err := o.state(ctx, s)
			if err != nil {
				return err
			}
			engine, err := o.policy.engine(ctx, s)
			if err != nil {
				return err
			}
			o.webhook.Policy = engine
			review, err := webhook.New(state, o.webhook).Review(ctx, body)
			if err != nil {
				return usageError(fmt.Errorf("%s: %w", o.file, err))
			}
			if err := o.output.print(s.Out, review, func(w io.Writer) error { return printReview(w, review) }); err != nil {
				return err
			}
			return reviewExit(review.Response)
		},
	}
	cmd.Flags().StringVarP(&o.file, "filename", "f", "", "AdmissionReview JSON ('-' for stdin)")
	cmd.Flags().StringVar(&o.cluster.driversFile, "drivers", "", "RBLNDrivers in the cluster ('-' for stdin)")
	cmd.Flags().StringVar(&o.cluster.nodesFile, "nodes", "", "nodes in the cluster: 'kubectl get nodes -o yaml' output or a Node stream ('-' for stdin)")
	cmd.Flags().StringVar(&o.cluster.clusterPolicyFile, "cluster-policy", "", "the RBLNClusterPolicy ('-' for stdin)")
	o.policy.addFlags(cmd.Flags(), "policy")
	cmd.Flags().BoolVar(&o.webhook.PolicyFailOpen, "policy-fail-open", false, "admit (with a warning) a request whose policy evaluation fails, as serve --policy-fail-open does")
	o.output.register(cmd.Flags())
	return cmd
}

// reviewExit is the exit code of an answered review (SPEC §7): 0 allowed, 1 denied, 2 when
// the webhook could not read the request (400, 413) or could not decide (503).
func reviewExit(resp *admissionv1.AdmissionResponse) error {
	switch {
	case resp.Allowed:
		return nil
	case resp.Result != nil && (resp.Result.Code == http.StatusBadRequest || resp.Result.Code == http.StatusRequestEntityTooLarge ||
		resp.Result.Code == http.StatusServiceUnavailable):
		return &exitError{code: ExitUsage, err: errSilent}
	}
	return &exitError{code: ExitInvalid, err: errSilent}
}

// printReview summarises an answered review for people.
func printReview(w io.Writer, review *admissionv1.AdmissionReview) error {
	req, resp := review.Request, review.Response
	verdict := "ALLOWED"
	if !resp.Allowed {
		verdict = "DENIED"
		if resp.Result != nil {
			verdict = fmt.Sprintf("DENIED (%d %s)", resp.Result.Code, resp.Result.Reason)
		}
	}
	name := req.Name
	if req.Namespace != "" {
		name = req.Namespace + "/" + name
	}
	fmt.Fprintf(w, "%s/%s %s: %s\n", req.Kind.Kind, name, req.Operation, verdict)
	if resp.Result != nil && !resp.Allowed {
		if resp.Result.Details == nil || len(resp.Result.Details.Causes) == 0 {
			fmt.Fprintf(w, "  DENY  %s\n", resp.Result.Message)
		} else {
			for _, c := range resp.Result.Details.Causes {
				fmt.Fprintf(w, "  DENY  %s: %s: %s\n", c.Type, c.Field, c.Message)
			}
		}
	}
	for _, wn := range resp.Warnings {
		fmt.Fprintf(w, "  WARN  %s\n", wn)
	}
	if len(resp.Patch) > 0 {
		fmt.Fprintf(w, "  PATCH %s\n", resp.Patch)
	}
	return nil
}

// state reads the cluster state files; each is optional.
func (o *reviewOptions) state(ctx context.Context, s Streams) (webhook.State, error) {
	cl, err := o.cluster.read(ctx, s)
	if err != nil {
		return nil, err
	}
	var cps []v1alpha1.RBLNClusterPolicy
	if cl.ClusterPolicy != nil {
		cps = append(cps, *cl.ClusterPolicy)
	}
	return webhook.NewStaticState(cl.Drivers, cl.Nodes, cps), nil
}

package app

import (
	"io"
	"net/http"

	"github.com/spf13/cobra"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/output"
)

func newReviewCommand(s Streams) *cobra.Command {
	job := action.NewReview(s.cfg)
	formats := output.NewFlag(output.JSON, judgingFormats...)
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
summarises the verdict, its causes, warnings and patch) and a top-level "findings" list: the
findings of the decision the response words, as 'check' reports them (a decoder that ignores
unknown fields, as Kubernetes' default one does, still reads it as an AdmissionReview; a strict
one reports "findings"). -o junit, sarif, markdown and github write the
findings. Exit code: 0 allowed, 1 denied, 2
unusable input or no decision (unreadable files, not an AdmissionReview, a request the webhook
cannot read — malformed or larger than the webhook's 7 MiB limit — or a policy evaluation that
failed while fail-closed; the review is still printed then, but for a file over 7 MiB, which is
not read past the limit).`,
		Example: `  kubectl get rblndrivers -o yaml > drivers.yaml
  kubectl get nodes -o yaml > nodes.yaml
  driverguard review -f request.json --drivers drivers.yaml --nodes nodes.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			review, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			r := &output.Report{Tool: "driverguard review", Findings: review.Findings, Document: review, Rules: action.NewRuleRegistry(),
				Table: func(w io.Writer) error { return output.ReviewTable(w, review.AdmissionReview) }}
			if req := review.Request; req != nil {
				r.Judged = []output.Subject{{Object: finding.Object{Kind: req.Kind.Kind, Name: req.Name}, Name: req.Kind.Kind + "/" + req.Name}}
			}
			if err := output.Write(s.Out, formats.Targets(), r); err != nil {
				return err
			}
			return reviewExit(review.Response)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&job.File, "filename", "f", "", "AdmissionReview JSON ('-' for stdin)")
	f.StringVar(&job.Cluster.Drivers, "drivers", "", "RBLNDrivers in the cluster ('-' for stdin)")
	f.StringVar(&job.Cluster.Nodes, "nodes", "", "nodes in the cluster: 'kubectl get nodes -o yaml' output or a Node stream ('-' for stdin)")
	f.StringVar(&job.Cluster.ClusterPolicy, "cluster-policy", "", "the RBLNClusterPolicy ('-' for stdin)")
	addPolicyFlags(f, &job.Policy, "policy")
	f.BoolVar(&job.PolicyFailOpen, "policy-fail-open", false, "admit (with a warning) a request whose policy evaluation fails, as serve --policy-fail-open does")
	registerOutput(f, formats)
	return cmd
}

// reviewExit is the exit code of an answered review (README.md "Exit codes"): 0 allowed, 1 denied, 2 when
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

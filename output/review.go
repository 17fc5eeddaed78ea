package output

import (
	"fmt"
	"io"

	admissionv1 "k8s.io/api/admission/v1"
)

// ReviewTable summarises an answered review for people.
func ReviewTable(w io.Writer, review *admissionv1.AdmissionReview) error {
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
	fmt.Fprintf(w, "%s/%s %s: %s\n", Escape(req.Kind.Kind), Escape(name), Escape(string(req.Operation)), verdict)
	if resp.Result != nil && !resp.Allowed {
		if resp.Result.Details == nil || len(resp.Result.Details.Causes) == 0 {
			fmt.Fprintf(w, "  DENY  %s\n", Escape(resp.Result.Message))
		} else {
			for _, c := range resp.Result.Details.Causes {
				fmt.Fprintf(w, "  DENY  %s\n", Escape(string(c.Type)+": "+c.Field+": "+c.Message))
			}
		}
	}
	for _, wn := range resp.Warnings {
		fmt.Fprintf(w, "  WARN  %s\n", Escape(wn))
	}
	if len(resp.Patch) > 0 {
		fmt.Fprintf(w, "  PATCH %s\n", Escape(string(resp.Patch)))
	}
	return nil
}

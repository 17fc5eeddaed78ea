package action

import (
	"context"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/webhook"
)

// Review answers one AdmissionReview offline through the webhook's own handler, with the
// cluster read from files instead of informer caches (`driverguard review`).
type Review struct {
	cfg *Configuration
	// File is the AdmissionReview JSON ("-": Stdin), read within the webhook's limit.
	File string
	// Cluster are the cluster files (Nodes, Drivers, ClusterPolicy), each optional.
	Cluster cluster.Files
	Policy  Policy
	// PolicyFailOpen admits (with a warning) a request whose policy evaluation fails.
	PolicyFailOpen bool
}

// ReviewResult is an answered AdmissionReview (its JSON: the AdmissionReview's fields, still
// one to a reader that ignores unknown fields, not to a strict one) with the findings of
// the decision its response words.
type ReviewResult struct {
	*admissionv1.AdmissionReview
	Findings []finding.Finding `json:"findings"`
}

// NewReview returns a Review.
func NewReview(cfg *Configuration) *Review { return &Review{cfg: cfg} }

// Run answers the review: the AdmissionReview with its response. An error means there is no
// answer: unusable input, or a request the webhook cannot read at all.
func (r *Review) Run(ctx context.Context) (*ReviewResult, error) {
	if r.File == "" {
		return nil, errors.New("-f is required: the AdmissionReview JSON file ('-' for stdin)")
	}
	if err := oneStdin(append(clusterStdinUsers(r.Cluster), stdinUser{"-f", r.File})...); err != nil {
		return nil, err
	}
	body, err := decode.ReadFile(ctx, r.File, r.cfg.Stdin, webhook.MaxReviewBytes)
	if tl := (*decode.TooLargeError)(nil); errors.As(err, &tl) {
		return nil, fmt.Errorf("%w, the webhook's: it would refuse the request (413) unread", err)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the AdmissionReview: %w", err)
	}
	st, err := cluster.FromFiles(ctx, r.Cluster, r.cfg.readOptions())
	if err != nil {
		return nil, err
	}
	engine, err := r.cfg.engine(ctx, r.Policy)
	if err != nil {
		return nil, err
	}
	state := cluster.NewStatic(st)
	review, verdict, err := webhook.New(state, webhook.Options{Policy: engine, PolicyFailOpen: r.PolicyFailOpen}).Decide(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.File, err)
	}
	res := &ReviewResult{AdmissionReview: review, Findings: []finding.Finding{}}
	if verdict != nil {
		res.Findings = append(verdict.Findings(), verdict.OmittedFindings()...)
	}
	return res, nil
}

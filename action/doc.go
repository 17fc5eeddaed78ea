// Package action is what driverguard's front ends call: one type per job, modelled on Helm's
// pkg/action. Each holds the shared [Configuration] (standard input, input limits), takes its
// options as exported fields, and does its job in Run(ctx), returning plain data — a report,
// a plan, ClusterReports, suite results, an AdmissionReview — for the caller to print:
//
//	Render, Check, Preview, Route, Plan, Audit, Review, Test, PostRender, Serve,
//	PolicyTest, PolicyList, PolicyInput, PolicyData
//
// Jobs render with package render and read the cluster with package cluster: from files, or
// live (list only) — [Live] is the one "live or files" decision of check, preview, audit and
// plan, and every job that reaches an API server (those, post-render's --live, plan's
// --release, the registry check's pull Secrets, serve) loads its REST config one way: client-go's
// loading rules (--kubeconfig, KUBECONFIG, ~/.kube/config, the in-cluster config), a context
// and namespace from the flags or, run by Helm, from Helm's environment. They judge with the one
// decision (release and decision, with package policy's engine), plan with package plan, audit
// with package audit, answer AdmissionReviews through package webhook (Review, Test) and run
// the webhook server through package serve (Serve). They print nothing (Serve logs to its
// Logger). An error means the job could not be done (the CLI's exit 2), except an
// [*InvalidError]: values judged and rejected (exit 1). A verdict is part of the result.
//
// docs/development.md maps the packages; docs/plan.md, docs/audit.md and
// docs/policy-authoring.md describe what plan, audit and the policy commands report.
package action

// Package action is what driverguard's front ends call: one type per job, modelled on Helm's
// pkg/action. Each holds the shared [Configuration] (standard input, input limits), takes its
// options as exported fields, and does its job in Run(ctx), returning plain data — a report,
// a plan, an AdmissionReview — for the caller to print:
//
//	Render, Check, Preview, Route, Plan, Review, PostRender, Serve,
//	PolicyTest, PolicyList, PolicyInput, PolicyData
//
// Jobs render with package render, read the cluster with package cluster, judge with the one
// decision (release, decision, policy) and plan with package plan; they print nothing (Serve
// logs to its Logger). An error means the job could not be done (the CLI's exit 2), except an
// [*InvalidError]: values judged and rejected (exit 1). A verdict is part of the result.
//
// docs/development.md maps the packages; docs/plan.md and docs/policy-authoring.md describe
// what plan and the policy commands report.
package action

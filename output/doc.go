// Package output writes findings (package finding) in every format driverguard prints: one
// writer per format — table, json, yaml, junit, sarif, markdown and github (workflow
// annotations) — each given a Report. Commands build the Report and choose the formats
// (-o, repeatable: `-o table -o sarif=results.sarif`); they never format findings themselves.
//
// It holds the commands' own views of their results too, so that a command binds flags, runs
// an action and hands the result to a writer: plan's table (PlanTable), change ticket
// (PlanMarkdown, with the estimated rollout as a mermaid gantt) and page (PlanHTML, its
// template embedded), each drawn from the plan alone — the rollout estimate is the plan's
// (plan.Estimate), not the view's; check's (CheckTable, CheckReport, PostRenderPass),
// preview's (PreviewTable), route's (RouteTable, RouteImages), audit's (AuditTable,
// AuditReport), render's (RenderTable), test's (TestReport), review's (ReviewTable) and
// policy test's (PolicyTests) views, and the warnings said on standard error (InputWarnings,
// PlanReleaseNotice).
//
// The views take the domain's results (plan.Plan, release.Report, release.PreviewReport,
// audit.RunResult, suite.RunResult, routing.Result, ...) or the fields they print, never
// package action's: output sits below action (docs/development.md "Map"), so that the
// commands' import chain does not grow a layer.
//
// Outputs are inert (docs/output.md, "Outputs are inert"): a table or text view shows every
// value from the input through Escape and is written through InertWriter, so no control
// character reaches the terminal; Markdown puts every value in a code span or escaped text
// (MarkdownCode, MarkdownText), so a code host makes no link, image or HTML of it; and Flag
// refuses two outputs on one stream while the flags are parsed.
package output

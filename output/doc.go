// Package output writes findings (package finding) in every format driverguard prints: one
// writer per format — table, json, yaml, junit, sarif, markdown and github (workflow
// annotations) — each given a Report. Commands build the Report and choose the formats
// (-o, repeatable: `-o table -o sarif=results.sarif`); they never format findings themselves.
//
// It holds the commands' own views of their results too: plan's table (PlanTable), change
// ticket (PlanMarkdown, with the estimated rollout as a mermaid gantt) and page (PlanHTML, its
// template embedded), each drawn from the plan alone — the rollout estimate is the plan's
// (plan.Estimate), not the view's.
//
// Outputs are inert (docs/output.md, "Outputs are inert"): a table or text view shows every
// value from the input through Escape and is written through InertWriter, so no control
// character reaches the terminal; Markdown puts every value in a code span or escaped text
// (MarkdownCode, MarkdownText), so a code host makes no link, image or HTML of it; and Flag
// refuses two outputs on one stream while the flags are parsed.
package output

// Package output writes findings (package finding) in every format driverguard prints: one
// writer per format — table, json, yaml, junit, sarif, markdown and github (workflow
// annotations) — each given a Report. Commands build the Report and choose the formats
// (-o, repeatable: `-o table -o sarif=results.sarif`); they never format findings themselves.
package output

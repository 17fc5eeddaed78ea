// Package suite holds the declarative policy test suites of `driverguard test`
// (docs/policy-authoring.md, "Test suites"): the *.dgtest.yaml format and its loading with
// line-numbered errors, the matching of a case's expectations against what the decision core
// made of it, and rule coverage. Package action judges the cases.
package suite

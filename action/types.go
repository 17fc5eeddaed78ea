package action

import (
	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/plan"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/suite"
)

// The results of the actions are the core's own types: these names let a front end print
// them without reaching into the core.
type (
	// Rendered is what Render returns: the objects, their provenance and the render warnings.
	Rendered = render.Result
	// Warning is a render warning: legal but suspicious values.
	Warning = render.Warning
	// ValuesLocation is where the user wrote a value: a values file's line and column, or
	// a command-line flag.
	ValuesLocation = render.ValuesLocation
	// CheckReport is the verdict of Check (and of Preview and PostRender) on a release.
	CheckReport = release.Report
	// Finding is one rule that fired on one object (package finding).
	Finding = finding.Finding
	// ObjectReport is one object's verdict in a CheckReport.
	ObjectReport = release.ObjectReport
	// NodeLoss is a node that would lose its driver.
	NodeLoss = release.NodeLoss
	// NodeChange is what a release does to one node's driver.
	NodeChange = release.NodeChange
	// Inputs say what the cluster was read from, part by part; Source one part.
	Inputs = cluster.Sources
	Source = cluster.Source
	// Routing is the routing of nodes to drivers, pools and images.
	Routing = routing.Result
	// RouteContract is the `route -o json` contract (docs/routing.md "`route -o json` contract").
	RouteContract = routing.ContractResult
	// ImageResult is the registry's answer for one image.
	ImageResult = registry.ImageResult
	// ImageCheck is what a registry check covered: images found, missing, not verified.
	ImageCheck = registry.Summary
	// PlanReport is what Plan computes (the `plan -o json` contract).
	PlanReport = plan.Plan
	// MissingImage is an image of a plan missing or not verified, with the pool that pulls it.
	MissingImage = plan.MissingImage
	// DriverPlan is what a plan does to one RBLNDriver.
	DriverPlan = plan.DriverPlan
	// NodePlan, PlanSummary, Drift and Denial are parts of a plan, for its page (-o html).
	NodePlan    = plan.NodePlan
	PlanSummary = plan.Summary
	Drift       = plan.Drift
	Denial      = plan.Denial
	// Input is the input document a policy evaluates.
	Input = policy.Input
	// PolicyInfo describes one policy of the set.
	PolicyInfo = policy.PolicyInfo
	// PolicyLoadError is policies that do not load, with the files they are in.
	PolicyLoadError = policy.LoadError
	// TestResult is the outcome of one Rego test.
	TestResult = policy.TestResult
	// AuditReport is the standing of one RBLNDriver, or of the cluster; AuditReportResult
	// one of its results (a finding with its openreports outcome).
	AuditReport       = audit.Report
	AuditReportResult = audit.Result
	// AuditOutcome is one audit pass: every report and the totals.
	AuditOutcome = audit.Outcome
	// Rule is one rule of the rule registry (docs/rules.md); RuleRegistry knows every rule of a
	// run.
	Rule         = finding.Rule
	RuleRegistry = finding.Registry
	// RuleCoverage is one rule of a test run's coverage.
	RuleCoverage = suite.RuleCoverage
	// TestRunResult is what Test returns: every case of every suite with the rule coverage;
	// TestCaseResult one case.
	TestRunResult  = suite.RunResult
	TestCaseResult = suite.CaseResult
	// AuditResult is what Audit returns: one audit, its ClusterReports and inputs.
	AuditResult = audit.RunResult
	// PreviewReport is what Preview returns: the preview of one set of values; PreviewResource
	// one rendered RBLNDriver; NodeReport what the values do to a node inventory.
	PreviewReport   = release.PreviewReport
	PreviewResource = release.PreviewResource
	NodeReport      = release.NodeReport
)

// Rules of the registry and their sources, for the printers.
const (
	RuleTestCaseFailed = finding.RuleTestCaseFailed
	RuleTestCaseError  = finding.RuleTestCaseError
	RuleNeverFired     = finding.RuleNeverFired

	RuleSourcePolicy = finding.SourcePolicy
)

// NewRuleRegistry returns a registry of the built-in rules and rules.
func NewRuleRegistry(rules ...Rule) *RuleRegistry { return finding.NewRegistry(rules...) }

// Values of the result types, for their printers.
const (
	ImageFound    = registry.Found
	ImageNotFound = registry.NotFound

	// ValuesFromFile is a value written in a values file (the others come from --set flags).
	ValuesFromFile = render.FromFile

	NodeNone       = plan.NodeNone
	NodeUpgrade    = plan.NodeUpgrade
	NodeBlocked    = plan.NodeBlocked
	NodeHeld       = plan.NodeHeld
	NodeLoseDriver = plan.NodeLoseDriver
	NodeGainDriver = plan.NodeGainDriver
	// BasisOwnerLabels: the current RBLNDrivers were not given; a node's driver now is read
	// from its owner label.
	BasisOwnerLabels = release.BasisOwnerLabels
	DriverCreate     = plan.DriverCreate
	DriverUpdate     = plan.DriverUpdate
	DriverDelete     = plan.DriverDelete

	TestPass  = policy.TestPass
	TestFail  = policy.TestFail
	TestError = policy.TestError

	AuditPass  = audit.Pass
	AuditFail  = audit.Fail
	AuditWarn  = audit.Warn
	AuditError = audit.Error
	// AuditBuiltinPolicy is the policy name of the built-in rules' and the drift's findings.
	AuditBuiltinPolicy = audit.BuiltinPolicy
	// EnforceAudit is the enforcement of a policy on trial: reported, never failing.
	EnforceAudit = policy.EnforceAudit
	// DefaultAuditMaxResults caps the results an audit report lists.
	DefaultAuditMaxResults = audit.DefaultMaxResults

	// ClusterKey is the data document policies read the cluster at (data.driverguard_cluster).
	ClusterKey = policy.ClusterKey
	// DefaultReleaseName is the release name when none is given.
	DefaultReleaseName = render.DefaultReleaseName
	// DefaultPolicyTimeout is the deadline of one policy evaluation; DefaultPolicyPoll how
	// often Serve re-reads the policy directories besides file system events.
	DefaultPolicyTimeout = policy.DefaultTimeout
	DefaultPolicyPoll    = policy.DefaultPollInterval
	// MaxListedWarnings bounds the problems a message lists; the others are counted.
	MaxListedWarnings = render.MaxListedErrors
)

package action

import (
	"context"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/render"
)

// Check judges every object a set of values renders exactly as the admission webhook would,
// in the order Helm applies them (`driverguard check`).
type Check struct {
	cfg *Configuration
	Judge
	// FailOnWarn fails the check on warnings too.
	FailOnWarn bool

	rendered *render.Result // the last Run's, for Locate
	rules    *finding.Registry
}

// NewCheck returns a Check of the default release.
func NewCheck(cfg *Configuration) *Check {
	return &Check{cfg: cfg, Judge: Judge{RenderOptions: RenderOptions{ReleaseName: DefaultReleaseName}}}
}

// Run judges the release; the report says whether it passed.
func (c *Check) Run(ctx context.Context) (*CheckReport, error) {
	j, err := c.cfg.judge(ctx, &c.Judge)
	if err != nil {
		return nil, err
	}
	c.rendered = j.rendered
	c.rules = finding.NewRegistry(j.rules...)
	return j.report(c.FailOnWarn), nil
}

// Rules is the registry of the last Run: the built-in rules and the rule bodies of the
// policies it evaluated.
func (c *Check) Rules() *finding.Registry {
	if c.rules == nil {
		return finding.NewRegistry()
	}
	return c.rules
}

// Locate returns where the user wrote the values an object's field (a finding's Field, ""
// for the object) was rendered from, in the values of the last Run.
func (c *Check) Locate(kind, name, field string) ValuesLocation {
	if c.rendered == nil {
		return ValuesLocation{}
	}
	return c.rendered.LocateValues(kind, name, field)
}

// LocateWarning returns where the user wrote the values a render warning of the last Run
// is about.
func (c *Check) LocateWarning(w Warning) ValuesLocation {
	if c.rendered == nil {
		return ValuesLocation{}
	}
	return c.rendered.LocateWarning(w)
}

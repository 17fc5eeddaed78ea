package action

import "context"

// Check judges every object a set of values renders exactly as the admission webhook would,
// in the order Helm applies them (`driverguard check`).
type Check struct {
	cfg *Configuration
	Judge
	// FailOnWarn fails the check on warnings too.
	FailOnWarn bool
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
	return j.report(c.FailOnWarn), nil
}

package action

import "context"

// Render renders values into the RBLNDriver and RBLNClusterPolicy objects `helm template`
// renders with the embedded chart.
type Render struct {
	cfg *Configuration
	RenderOptions
}

// NewRender returns a Render of the default release.
func NewRender(cfg *Configuration) *Render {
	return &Render{cfg: cfg, RenderOptions: RenderOptions{ReleaseName: DefaultReleaseName}}
}

// Run renders the values.
func (r *Render) Run(ctx context.Context) (*Rendered, error) {
	if err := oneStdin(r.stdinUsers()...); err != nil {
		return nil, err
	}
	return r.cfg.render(ctx, &r.RenderOptions)
}

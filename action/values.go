package action

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/render"
)

// ValuesOptions are Helm's value flags: -f, --set, --set-string, --set-json, --set-file.
type ValuesOptions = render.ValuesOptions

// RenderOptions are the values a release is rendered from, as `helm template` takes them.
type RenderOptions struct {
	ValuesOptions
	// ReleaseName is the Helm release (the app.kubernetes.io/instance label).
	ReleaseName string
	// Provenance keeps where each rendered field came from (Preview explains it).
	Provenance bool
}

// given reports whether any values were given.
func (v *RenderOptions) given() bool {
	return len(v.ValueFiles)+len(v.Values)+len(v.StringValues)+len(v.JSONValues)+len(v.FileValues) > 0
}

// stdinUsers are the value inputs that can read standard input.
func (v *RenderOptions) stdinUsers() []stdinUser {
	var out []stdinUser
	for _, f := range v.ValueFiles {
		out = append(out, stdinUser{"-f", f})
	}
	for _, f := range v.FileValues {
		if _, path, ok := strings.Cut(f, "="); ok {
			out = append(out, stdinUser{"--set-file", path})
		}
	}
	return out
}

// render loads the values (every file within MaxValuesBytes, "-" from Stdin) and renders them
// with the embedded chart. Invalid values are an *InvalidError.
func (c *Configuration) render(ctx context.Context, v *RenderOptions) (*render.Result, error) {
	r, _, err := c.renderValues(ctx, v)
	return r, err
}

// renderValues is render, also returning the values as loaded (before the chart's defaults).
func (c *Configuration) renderValues(ctx context.Context, v *RenderOptions) (*render.Result, map[string]any, error) {
	if err := chartutil.ValidateReleaseName(v.ReleaseName); err != nil {
		return nil, nil, fmt.Errorf("--release-name %q: %w", validation.Truncate(v.ReleaseName, 80), err)
	}
	opts := v.ValuesOptions
	opts.Stdin, opts.MaxFileBytes = c.Stdin, c.maxValuesBytes()
	defer limitMemoryForValues(opts.ValueFiles, opts.MaxFileBytes)()
	vals, sources, err := render.Load(ctx, opts)
	if err != nil {
		return nil, nil, withLimitHint(err, FlagMaxValuesSize)
	}
	ch, err := charts.Driverguard()
	if err != nil {
		return nil, nil, fmt.Errorf("the embedded chart is broken: %w", err)
	}
	r, err := render.RenderContext(ctx, ch, vals, render.Options{ReleaseName: v.ReleaseName, Sources: sources, SkipProvenance: !v.Provenance})
	var invalid *render.InvalidValuesError
	switch {
	case errors.As(err, &invalid):
		return nil, nil, &InvalidError{Err: err, sources: sources}
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	case err != nil:
		return nil, nil, &InvalidError{Err: err, sources: sources}
	}
	return r, vals, nil
}

// Manifest is the YAML stream of a render result, as `helm template` prints it.
func Manifest(r *Rendered) ([]byte, error) { return render.Manifest(r) }

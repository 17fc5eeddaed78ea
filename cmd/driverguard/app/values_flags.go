package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/render"
)

// valuesFlags are the Helm-compatible value flags shared by render, preview and check.
type valuesFlags struct {
	values      render.ValuesOptions
	releaseName string
	// provenance keeps where each rendered field came from (preview explains it).
	provenance bool
}

func (f *valuesFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&f.values.ValueFiles, "values", "f", nil, "values file (can repeat; later files win), as for helm template")
	fs.StringArrayVar(&f.values.Values, "set", nil, "set a value on the command line (can repeat or be comma-separated: key1=val1,key2=val2)")
	fs.StringArrayVar(&f.values.StringValues, "set-string", nil, "set a STRING value on the command line")
	fs.StringArrayVar(&f.values.JSONValues, "set-json", nil, "set a JSON value on the command line")
	fs.StringArrayVar(&f.values.FileValues, "set-file", nil, "set a value from a file (key=path)")
	fs.StringVar(&f.releaseName, "release-name", render.DefaultReleaseName, "Helm release name used for the app.kubernetes.io/instance label")
}

// stdinUsers are the value flags that can read standard input.
func (f *valuesFlags) stdinUsers() []stdinUser {
	var out []stdinUser
	for _, v := range f.values.ValueFiles {
		out = append(out, stdinUser{"-f", v})
	}
	for _, v := range f.values.FileValues {
		if _, path, ok := strings.Cut(v, "="); ok {
			out = append(out, stdinUser{"--set-file", path})
		}
	}
	return out
}

// render loads the values (every file within --max-values-size, "-" from s.In) and renders
// them with the embedded chart. Unreadable values are a usage error (exit 2); invalid values
// are exit 1.
func (f *valuesFlags) render(ctx context.Context, s Streams) (*render.Result, error) {
	if err := chartutil.ValidateReleaseName(f.releaseName); err != nil {
		return nil, usageError(fmt.Errorf("--release-name %q: %w", validation.Truncate(f.releaseName, 80), err))
	}
	opts := f.values
	opts.Stdin, opts.MaxFileBytes = s.In, int64(limitsOf(s).values)
	defer limitMemoryForValues(opts.ValueFiles, opts.MaxFileBytes)()
	vals, sources, err := render.Load(ctx, opts)
	if err != nil {
		return nil, usageError(withLimitHint(err, flagMaxValuesSize))
	}
	ch, err := charts.Driverguard()
	if err != nil {
		return nil, fmt.Errorf("the embedded chart is broken: %w", err)
	}
	r, err := render.RenderContext(ctx, ch, vals, render.Options{ReleaseName: f.releaseName, Sources: sources, SkipProvenance: !f.provenance})
	var invalid *render.InvalidValuesError
	switch {
	case errors.As(err, &invalid):
		return nil, invalidError(err)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, invalidError(err)
	}
	return r, nil
}

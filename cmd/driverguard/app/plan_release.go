package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/render"
)

// releaseFlags name a deployed Helm release to plan from.
type releaseFlags struct {
	name      string
	namespace string
	context   string
}

// deployedRelease is what plan --release reads: the release's user-supplied values (as `helm
// get values` shows them) and its status.
type deployedRelease struct {
	Name, Namespace string
	Revision        int
	Status          release.Status
	Values          map[string]any
}

// helmStorageDriver is the storage driver Helm's CLI uses: HELM_DRIVER, "secret" by default.
func helmStorageDriver() string {
	if d := os.Getenv("HELM_DRIVER"); d != "" {
		return d
	}
	return "secret"
}

// readRelease reads the latest revision of the release through Helm's SDK, as `helm get
// values` does: from the target's namespace (else its context's, else "default") with the
// storage driver Helm uses.
func (f *releaseFlags) readRelease(ctx context.Context, target kubeTarget) (*deployedRelease, error) {
	if err := chartutil.ValidateReleaseName(f.name); err != nil {
		return nil, usageError(fmt.Errorf("--release %q: %w", validation.Truncate(f.name, 80), err))
	}
	getter := genericclioptions.NewConfigFlags(false)
	if target.kubeconfig != "" {
		getter.KubeConfig = &target.kubeconfig
	}
	if target.context != "" {
		getter.Context = &target.context
	}
	ns := target.namespace
	if ns == "" {
		if cfgNS, _, err := getter.ToRawKubeConfigLoader().Namespace(); err == nil && cfgNS != "" {
			ns = cfgNS
		} else {
			ns = "default"
		}
	}
	getter.Namespace = &ns
	timeout := 30 * time.Second
	getter.Timeout = new(string)
	*getter.Timeout = timeout.String()
	cfg := &action.Configuration{}
	if err := cfg.Init(getter, ns, helmStorageDriver(), func(string, ...any) {}); err != nil {
		return nil, usageError(fmt.Errorf("reading release %s in namespace %s: %w", f.name, ns, err))
	}
	type result struct {
		rel *release.Release
		err error
	}
	done := make(chan result, 1)
	go func() { // Helm's storage takes no context: bounded here instead
		rel, err := action.NewGet(cfg).Run(f.name)
		done <- result{rel, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(timeout):
		return nil, usageError(fmt.Errorf("reading release %s in namespace %s: no answer within %s", f.name, ns, timeout))
	}
	if r.err != nil {
		return nil, usageError(fmt.Errorf("reading release %s in namespace %s (storage driver %s): %w; `helm list -n %s` lists the releases there", f.name, ns, helmStorageDriver(), r.err, ns))
	}
	if r.rel.Chart == nil || r.rel.Chart.Metadata == nil || r.rel.Chart.Metadata.Name != "driverguard" {
		chartName := "no chart"
		if r.rel.Chart != nil && r.rel.Chart.Metadata != nil {
			chartName = "chart " + strconv.Quote(validation.Truncate(r.rel.Chart.Metadata.Name, 80))
		}
		return nil, usageError(fmt.Errorf("release %s in namespace %s is of %s, not driverguard's: its values are not driverguard's values", f.name, ns, chartName))
	}
	vals := r.rel.Config
	if vals == nil {
		vals = map[string]any{}
	}
	st := release.StatusUnknown
	if r.rel.Info != nil {
		st = r.rel.Info.Status
	}
	return &deployedRelease{Name: f.name, Namespace: ns, Revision: r.rel.Version, Status: st, Values: vals}, nil
}

// renderDeployed renders the release's values with the embedded chart, as the deployed
// objects (the release's RBLNDrivers and RBLNClusterPolicy) — what `driverguard render -f
// <the values> --release-name NAME` prints.
func renderDeployed(ctx context.Context, d *deployedRelease) (*render.Result, error) {
	ch, err := charts.Driverguard()
	if err != nil {
		return nil, fmt.Errorf("the embedded chart is broken: %w", err)
	}
	r, err := render.RenderContext(ctx, ch, d.Values, render.Options{ReleaseName: d.Name, SkipProvenance: true})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var invalid *render.InvalidValuesError
		if errors.As(err, &invalid) {
			return nil, usageError(fmt.Errorf("the values of release %s (revision %d) do not render with this driverguard's chart: %w", d.Name, d.Revision, err))
		}
		return nil, usageError(fmt.Errorf("rendering the values of release %s (revision %d): %w", d.Name, d.Revision, err))
	}
	return r, nil
}

package action

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"helm.sh/helm/v3/pkg/chartutil"
	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/render"
)

// DeployedRelease is what Plan reads of a release: its user-supplied values (as `helm get
// values` shows them) and its status.
type DeployedRelease struct {
	Name, Namespace string
	Revision        int
	// Status is Helm's status of the revision (deployed, failed, pending-upgrade, ...).
	Status string
	Values map[string]any
}

// Deployed reports whether the revision is deployed: its values are what the cluster runs.
func (d *DeployedRelease) Deployed() bool { return d.Status == string(helmrelease.StatusDeployed) }

// helmStorageDriver is the storage driver Helm's CLI uses: HELM_DRIVER, "secret" by default.
func helmStorageDriver() string {
	if d := os.Getenv("HELM_DRIVER"); d != "" {
		return d
	}
	return "secret"
}

// releaseTimeout bounds reading a release from the API server.
const releaseTimeout = 30 * time.Second

// readRelease reads the latest revision of the release name as `helm get values` does: from
// the target's namespace (else its context's, else "default") in the storage Helm uses
// (HELM_DRIVER: Secrets, or ConfigMaps). The revision is read by driverguard, not by Helm's
// storage driver, so that it is decompressed through limit (see DefaultMaxReleaseBytes).
func readRelease(ctx context.Context, name string, target cluster.Target, limit int64) (*DeployedRelease, error) {
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return nil, fmt.Errorf("--release %q: %w", validation.Truncate(name, 80), err)
	}
	if limit <= 0 {
		limit = DefaultMaxReleaseBytes
	}
	api := apiServerOf(target)
	ns := api.namespace()
	cfg, err := api.restConfig("read it from", "driverguard-plan", releaseTimeout)
	if err != nil {
		return nil, fmt.Errorf("reading release %s: %w", name, err)
	}
	store, err := newReleaseStorage(cfg, helmStorageDriver(), ns, limit)
	if err != nil {
		return nil, fmt.Errorf("reading release %s in namespace %s: %w", name, ns, err)
	}
	ctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	rev, err := store.latest(ctx, name)
	if err == nil {
		var rel *storedRelease
		if rel, err = store.read(ctx, name, rev); err == nil {
			return deployedRelease(name, ns, rel)
		}
	}
	var tl *ReleaseTooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, err
	case ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("reading release %s in namespace %s: no answer within %s", name, ns, releaseTimeout)
	}
	return nil, fmt.Errorf("reading release %s in namespace %s (storage driver %s): %w; `helm list -n %s` lists the releases there", name, ns, helmStorageDriver(), err, ns)
}

// deployedRelease is what plan takes of a stored revision: a release of driverguard's chart.
func deployedRelease(name, ns string, rel *storedRelease) (*DeployedRelease, error) {
	if rel.Chart == nil || rel.Chart.Metadata == nil || rel.Chart.Metadata.Name != "driverguard" {
		chartName := "no chart"
		if rel.Chart != nil && rel.Chart.Metadata != nil {
			chartName = "chart " + strconv.Quote(validation.Truncate(rel.Chart.Metadata.Name, 80))
		}
		return nil, fmt.Errorf("release %s in namespace %s is of %s, not driverguard's: its values are not driverguard's values", name, ns, chartName)
	}
	vals := rel.Config
	if vals == nil {
		vals = map[string]any{}
	}
	st := string(helmrelease.StatusUnknown)
	if rel.Info != nil && rel.Info.Status != "" {
		st = rel.Info.Status
	}
	return &DeployedRelease{Name: name, Namespace: ns, Revision: rel.Version, Status: st, Values: vals}, nil
}

// renderDeployed renders the release's values with the embedded chart, as the deployed
// objects (the release's RBLNDrivers and RBLNClusterPolicy) — what `driverguard render -f
// <the values> --release-name NAME` prints.
func renderDeployed(ctx context.Context, d *DeployedRelease) (*render.Result, error) {
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
			return nil, fmt.Errorf("the values of release %s (revision %d) do not render with this driverguard's chart: %w", d.Name, d.Revision, err)
		}
		return nil, fmt.Errorf("rendering the values of release %s (revision %d): %w", d.Name, d.Revision, err)
	}
	return r, nil
}

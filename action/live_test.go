package action_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/cluster"
)

// TestNoClusterSaysWhereItLooked: every job that reaches an API server gets its REST config
// the same way, so with no cluster configured each says what it wanted the cluster for and
// where it looked, in client-go's order, in the same words.
func TestNoClusterSaysWhereItLooked(t *testing.T) {
	const where = "(--kubeconfig, KUBECONFIG, ~/.kube/config or the in-cluster config)"
	for name, tc := range map[string]struct {
		run  func(ctx context.Context) error
		want string
	}{
		"check --live": {want: "no cluster to read " + where, run: func(ctx context.Context) error {
			job := action.NewCheck(config(""))
			job.ValueFiles, job.Live.Live = []string{exampleValues}, true
			_, err := job.Run(ctx)
			return err
		}},
		"preview --live --check-images": {want: "no cluster to read pull Secrets from " + where, run: func(ctx context.Context) error {
			job := action.NewPreview(config(""))
			job.ValueFiles, job.Live.Live, job.CheckImages = []string{exampleValues}, true, true
			_, err := job.Run(ctx)
			return err
		}},
		"audit --live": {want: "no cluster to read " + where, run: func(ctx context.Context) error {
			job := action.NewAudit(config(""))
			job.Live.Live = true
			_, err := job.Run(ctx)
			return err
		}},
		"plan --live": {want: "no cluster to read " + where, run: func(ctx context.Context) error {
			job := action.NewPlan(config(""))
			job.Live.Live = true
			_, err := job.Run(ctx)
			return err
		}},
		"plan --release": {want: "reading release driverguard: no cluster to read it from " + where, run: func(ctx context.Context) error {
			job := action.NewPlan(config(""))
			job.Cluster, job.Release = cluster.Files{Nodes: exampleNodes}, "driverguard"
			_, err := job.Run(ctx)
			return err
		}},
		"post-render --live true": {want: "--live: no cluster to read " + where, run: func(ctx context.Context) error {
			job := action.NewPostRender(config("apiVersion: rebellions.ai/v1alpha1\nkind: RBLNDriver\nmetadata: {name: d}\n"))
			job.Live = action.LiveTrue
			_, err := job.Run(ctx)
			return err
		}},
		"serve": {want: "no cluster to watch " + where, run: func(ctx context.Context) error {
			return action.NewServe().Run(ctx)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			require.ErrorContains(t, tc.run(t.Context()), tc.want)
		})
	}
}

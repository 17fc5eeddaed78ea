package differential

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/driverguard/driverguard/render"
)

// TestCorpus renders every committed values file through the real `helm template` binary and
// the Go renderer, under helm v3 and helm v4 alike. ok-* files must render to equal objects;
// err-* files must be rejected by all three, and the Go error must contain the file's
// "# want:" line.
func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the helm binary")
	}
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "test", "testdata", "values", "*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 30, "the corpus must hold at least 30 values files")
	ch := loadChartDir(t)
	helms := helmBinaries(t)
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			vals, err := render.LoadValues(render.ValuesOptions{ValueFiles: []string{file}})
			require.NoError(t, err)
			fromGo, goErr := goRender(ch, vals)
			ok := strings.HasPrefix(name, "ok-")
			for helm, bin := range helms {
				fromHelm, helmErr := helmTemplate(t, bin, file)
				if ok {
					require.NoError(t, helmErr, "%s must render it", helm)
					require.NoError(t, goErr, "the Go renderer must render it")
					assertSameObjects(t, helm, fromHelm, fromGo)
				} else {
					require.Error(t, helmErr, "%s must reject it", helm)
				}
			}
			switch {
			case ok:
			case strings.HasPrefix(name, "err-"):
				require.Error(t, goErr, "the Go renderer must reject it")
				var invalid *render.InvalidValuesError
				require.True(t, errors.As(goErr, &invalid), "the Go renderer's own checks must catch it (not only the schema backstop): %v", goErr)
				want := wantFromHeader(data)
				require.NotEmpty(t, want, "an err-* file needs a '# want:' line")
				require.Contains(t, goErr.Error(), want)
			default:
				t.Fatalf("corpus file names start with ok- or err-: %s", name)
			}
		})
	}
}

func assertSameObjects(t *testing.T, helm string, fromHelm, fromGo objects) {
	t.Helper()
	require.NotNil(t, fromHelm.ClusterPolicy, "%s rendered no RBLNClusterPolicy", helm)
	require.NotNil(t, fromGo.ClusterPolicy, "the Go renderer rendered no RBLNClusterPolicy")
	if !apiequality.Semantic.DeepEqual(fromHelm, fromGo) {
		t.Fatalf("%s and the Go renderer disagree (-%s +go):\n%s", helm, helm, cmp.Diff(fromHelm, fromGo))
	}
}

package differential

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/render"
)

const releaseName = "dg"

// repoRoot is the repository root, found from this file's location.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// helmBinaries are the real helm binaries the chart must render identically under: bin/helm
// (v3) and bin/helm4 (v4), both built by hack/tools.sh from their modules.
func helmBinaries(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, file := range map[string]string{"helm3": "helm", "helm4": "helm4"} {
		p := filepath.Join(repoRoot(t), "bin", file)
		if !fileExists(p) {
			t.Fatalf("bin/%s is missing: run `make tools` (hack/tools.sh helm builds helm v3 and v4 from the Go module proxy)", file)
		}
		out[name] = p
	}
	return out
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// objects are the RBLNDrivers (sorted by name) and the RBLNClusterPolicy of one rendering.
type objects struct {
	Drivers       []v1alpha1.RBLNDriver
	ClusterPolicy *v1alpha1.RBLNClusterPolicy
}

// helmTemplate runs `helm template` of the helm binary bin on the chart directory with one
// values file.
func helmTemplate(t testing.TB, bin, valuesFile string) (objects, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "template", releaseName, filepath.Join(repoRoot(t), "charts", "driverguard"), "-f", valuesFile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return objects{}, fmt.Errorf("helm template: %w: %s", err, stderr.String())
	}
	return parseManifest(stdout.Bytes())
}

// helmEngine renders the chart with helm's own install action, client-only, in-process.
func helmEngine(ch *chart.Chart, vals map[string]any) (objects, error) {
	cfg := &action.Configuration{}
	inst := action.NewInstall(cfg)
	inst.ClientOnly = true
	inst.DryRun = true
	inst.Replace = true
	inst.ReleaseName = releaseName
	inst.Namespace = "default"
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.0", Major: "1", Minor: "37"}
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return objects{}, err
	}
	return parseManifest([]byte(rel.Manifest))
}

func parseManifest(data []byte) (objects, error) {
	var out objects
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, err
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return out, fmt.Errorf("reading a rendered document: %w", err)
		}
		switch meta.Kind {
		case "RBLNDriver":
			var d v1alpha1.RBLNDriver
			if err := yaml.UnmarshalStrict(doc, &d); err != nil {
				return out, fmt.Errorf("decoding an RBLNDriver: %w\n%s", err, doc)
			}
			out.Drivers = append(out.Drivers, d)
		case "RBLNClusterPolicy":
			var cp v1alpha1.RBLNClusterPolicy
			if err := yaml.UnmarshalStrict(doc, &cp); err != nil {
				return out, fmt.Errorf("decoding the RBLNClusterPolicy: %w\n%s", err, doc)
			}
			if out.ClusterPolicy != nil {
				return out, errors.New("two RBLNClusterPolicy documents")
			}
			out.ClusterPolicy = &cp
		}
	}
	sort.Slice(out.Drivers, func(i, j int) bool { return out.Drivers[i].Name < out.Drivers[j].Name })
	return out, nil
}

// goRender renders with the Go renderer and round-trips the result through its YAML output,
// so what is compared is what `driverguard render` prints.
func goRender(ch *chart.Chart, vals map[string]any) (objects, error) {
	r, err := render.Render(ch, vals, render.Options{ReleaseName: releaseName})
	if err != nil {
		return objects{}, err
	}
	manifest, err := render.Manifest(r)
	if err != nil {
		return objects{}, err
	}
	return parseManifest(manifest)
}

func loadChartDir(t testing.TB) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(filepath.Join(repoRoot(t), "charts", "driverguard"))
	if err != nil {
		t.Fatalf("loading charts/driverguard: %v", err)
	}
	return ch
}

func wantFromHeader(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		if w, ok := strings.CutPrefix(line, "# want: "); ok {
			return strings.TrimSpace(w)
		}
	}
	return ""
}

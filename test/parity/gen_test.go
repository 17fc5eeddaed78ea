package parity

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/operator"
)

// The label vocabulary of generated nodes and selectors: small, so that generated drivers
// overlap, contain one another and tie.
var (
	families = []string{"atom", "atom", "rebel", "ca"}
	envs     = []string{"canary", "prod", "prod"}
	zones    = []string{"a", "b"}
	oses     = [][2]string{{"ubuntu", "22.04"}, {"ubuntu", "24.04"}, {"rhel", "9.2"}}
	kernels  = []string{"6.8.0-90-generic", "6.8.0-45-generic", "5.14.0-284.11.1.el9_2.x86_64", "6.1.0-custom_build"}
	owners   = []string{"", "", "rbln-driver", "rbln-driver-atom", "rbln-driver-canary", "rbln-driver-gone"}
)

// generatedNodes makes an inventory: mostly candidates, some without a family or out of
// scope, RHEL kernels with underscores, and owner labels of present, future and
// removed drivers.
func generatedNodes(r *rand.Rand, n int) []corev1.Node {
	out := make([]corev1.Node, n)
	for i := range out {
		osv := oses[r.IntN(len(oses))]
		labels := map[string]string{
			operator.LabelDeployDriver: "true",
			operator.LabelFamily:       families[r.IntN(len(families))],
			operator.LabelOSID:         osv[0],
			operator.LabelOSVersion:    osv[1],
			operator.LabelKernel:       kernels[r.IntN(len(kernels))],
			"env":                      envs[r.IntN(len(envs))],
			"zone":                     zones[r.IntN(len(zones))],
		}
		switch x := r.IntN(16); {
		case x == 0:
			delete(labels, operator.LabelFamily)
		case x == 1:
			labels[operator.LabelDeployDriver] = "pre-installed"
		}
		if o := owners[r.IntN(len(owners))]; o != "" {
			labels[operator.LabelOwner] = o
		}
		out[i] = corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gen-%02d", i), Labels: labels}}
	}
	return out
}

// generatedCases writes n random values files and m upgrades (a values file applied on top
// of another one).
func generatedCases(t *testing.T, dir string, n, m int) []valuesCase {
	t.Helper()
	write := func(name string, vals map[string]any) string {
		data, err := yaml.Marshal(vals)
		require.NoError(t, err)
		file := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(file, data, 0o600))
		return file
	}
	var out []valuesCase
	for i := range n {
		name := fmt.Sprintf("gen-%02d", i)
		out = append(out, valuesCase{name: name, file: write(name, generatedValues(rand.New(rand.NewPCG(uint64(i), 1))))})
	}
	for i := range m {
		prev := write(fmt.Sprintf("upgrade-%02d-from", i), generatedValues(rand.New(rand.NewPCG(uint64(i), 2))))
		next := write(fmt.Sprintf("upgrade-%02d-to", i), generatedValues(rand.New(rand.NewPCG(uint64(i), 3))))
		out = append(out, valuesCase{name: fmt.Sprintf("upgrade-%02d", i), file: next, previous: prev})
	}
	return out
}

// generatedValues makes driver values that render (the corpus covers invalid values) but
// that the webhook may well deny: ties among instances, identical selectors, moving tags,
// a family in the image path, a default that would run on too many nodes; and driver loss
// (no default, narrowed or removed instances).
func generatedValues(r *rand.Rand) map[string]any {
	tags := []string{"3.2.2", "3.3.0", "3.3.0-rc1", "latest"}
	d := map[string]any{"image": map[string]any{"tag": tags[r.IntN(3)]}}
	noDefault := r.IntN(5) == 0
	if noDefault {
		d["deployDefault"] = false
	}
	keys := []string{"atom", "rebel", "canary", "prod", "zone-a", "atom-canary"}
	instances := map[string]any{}
	var selectors []map[string]any
	for _, k := range keys[:1+r.IntN(4)] {
		inst := map[string]any{"image": map[string]any{"tag": tags[r.IntN(len(tags))]}}
		var sel map[string]any
		if len(selectors) > 0 && r.IntN(8) == 0 {
			sel = selectors[r.IntN(len(selectors))] // identical to an earlier instance's
		} else {
			sel = map[string]any{}
			for len(sel) == 0 {
				if r.IntN(2) == 0 {
					sel[operator.LabelFamily] = families[r.IntN(len(families))]
				}
				if r.IntN(2) == 0 {
					sel["env"] = envs[r.IntN(len(envs))]
				}
				if r.IntN(3) == 0 {
					sel["zone"] = zones[r.IntN(len(zones))]
				}
			}
		}
		selectors = append(selectors, sel)
		inst["nodeSelector"] = sel
		if r.IntN(12) == 0 {
			inst["image"].(map[string]any)["repository"] = "rebellions/atom/rbln-driver"
		}
		instances[k] = inst
	}
	d["instances"] = instances
	if r.IntN(4) == 0 {
		d["upgradePolicy"] = map[string]any{"maxParallelUpgrades": 0, "reboot": map[string]any{"enable": true}}
	}
	return map[string]any{"driver": d}
}

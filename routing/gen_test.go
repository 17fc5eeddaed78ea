package routing

import (
	"fmt"
	"math/rand/v2"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// clusterShape sizes a generated cluster.
type clusterShape struct {
	nodes, drivers int
	// invalidEvery makes every n-th instance invalid (0: never).
	invalidEvery int
	// currentOwners gives nodes an owner label from the driver names (or a stale one).
	currentOwners bool
}

var (
	genFamilies = []string{"atom", "atom", "atom", "rebel", "rebel", "atom-max", "Atom_X"}
	genOSes     = [][2]string{{"ubuntu", "22.04"}, {"ubuntu", "22.04"}, {"ubuntu", "24.04"}, {"rhel", "9.2"}}
	genKernels  = map[string][]string{
		"ubuntu22.04": {"6.8.0-90-generic", "6.8.0-90-generic", "6.8.0-1015-AWS", "5.15.0-119-generic"},
		"ubuntu24.04": {"6.8.0-45-generic", "6.11.0-1004-gcp"},
		"rhel9.2":     {"5.14.0-284.11.1.el9_2.x86_64", "5.14.0-284.30.1.el9_2.x86_64"},
	}
	genKeys = []struct {
		key    string
		values []string
	}{
		{operator.LabelFamily, nil}, // values from genFamilies
		{"env", []string{"canary", "prod", "staging", ""}},
		{"topology.kubernetes.io/zone", []string{"zone-a", "zone-b", "zone-c"}},
		{"rack", []string{"r1", "r2", "r3", "r4"}},
		{"team", []string{"ml", "infra"}},
		{"npu.rebellions.ai/generation", []string{"g1", "g2"}},
	}
)

// genNodes makes a realistic node set: mostly candidates on a few families, OS versions and
// kernels; some canaries, zones, racks and teams; a few out of scope, without family, or with
// missing node-feature labels.
func genNodes(r *rand.Rand, n int, ownerNames []string) []Node {
	nodes := make([]Node, n)
	for i := range nodes {
		labels := map[string]string{
			"kubernetes.io/hostname":           fmt.Sprintf("npu-%05d", i),
			"kubernetes.io/os":                 "linux",
			"kubernetes.io/arch":               "amd64",
			"node.kubernetes.io/instance-type": []string{"npu.8x", "npu.4x"}[r.IntN(2)],
			operator.LabelDeployDriver:         "true",
		}
		switch x := r.IntN(100); {
		case x < 3:
			labels[operator.LabelDeployDriver] = "pre-installed"
		case x < 4:
			delete(labels, operator.LabelDeployDriver)
		}
		if r.IntN(50) != 0 {
			labels[operator.LabelFamily] = genFamilies[r.IntN(len(genFamilies))]
		}
		osv := genOSes[r.IntN(len(genOSes))]
		if r.IntN(80) != 0 {
			labels[operator.LabelOSID] = osv[0]
			labels[operator.LabelOSVersion] = osv[1]
		}
		kernels := genKernels[osv[0]+osv[1]]
		if r.IntN(80) != 0 {
			labels[operator.LabelKernel] = kernels[r.IntN(len(kernels))]
		}
		if r.IntN(200) == 0 {
			labels[operator.LabelKernel] = "6.1.0+rpt-rpi-v8"
		}
		for _, k := range genKeys[1:] {
			if r.IntN(3) == 0 {
				labels[k.key] = k.values[r.IntN(len(k.values))]
			}
		}
		if len(ownerNames) > 0 && r.IntN(2) == 0 {
			labels[operator.LabelOwner] = ownerNames[r.IntN(len(ownerNames))]
		}
		nodes[i] = Node{Name: fmt.Sprintf("npu-%05d", i), Labels: labels}
	}
	return nodes
}

// genDrivers makes the default driver plus instances with random selectors of 1-4 keys.
func genDrivers(r *rand.Rand, n, invalidEvery int) []v1alpha1.RBLNDriver {
	out := []v1alpha1.RBLNDriver{drv(v1alpha1.DefaultDriverName, nil)}
	for i := 1; i < n; i++ {
		s := map[string]string{}
		for range 1 + r.IntN(4) {
			k := genKeys[r.IntN(len(genKeys))]
			if k.key == operator.LabelFamily {
				s[k.key] = genFamilies[r.IntN(len(genFamilies))]
			} else {
				s[k.key] = k.values[r.IntN(len(k.values))]
			}
		}
		d := withVersion(drv(fmt.Sprintf("rbln-driver-i%d", i), s), fmt.Sprintf("3.%d.%d", r.IntN(4), r.IntN(10)))
		if invalidEvery > 0 && i%invalidEvery == 0 {
			switch r.IntN(6) {
			case 0: // the operator excludes these
				d.Spec.NodeSelector[operator.LabelOwner] = "x"
			case 1:
				d.Spec.NodeSelector[operator.LabelDeployDriver] = "true"
			case 2:
				d.Name = fmt.Sprintf("rbln-driver-%d-%s", i, strings.Repeat("x", 60))
			case 3:
				now := metav1.Now()
				d.DeletionTimestamp = &now
			case 4: // driverguard refuses these; the operator routes them
				d.Spec.NodeSelector = nil
			default:
				d.Name = fmt.Sprintf("RBLN_%d", i)
			}
		}
		out = append(out, d)
	}
	return out
}

func genCluster(r *rand.Rand, shape clusterShape) ([]v1alpha1.RBLNDriver, []Node) {
	drivers := genDrivers(r, shape.drivers, shape.invalidEvery)
	var owners []string
	if shape.currentOwners {
		for _, d := range drivers {
			owners = append(owners, d.Name)
		}
		owners = append(owners, "rbln-driver-deleted")
	}
	return drivers, genNodes(r, shape.nodes, owners)
}

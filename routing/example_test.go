package routing_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/routing"
)

// multiDriver mirrors examples/multi-driver.yaml: the default driver, an atom canary and a
// rebel instance.
func multiDriver() []v1alpha1.RBLNDriver {
	d := func(name, version string, sel map[string]string) v1alpha1.RBLNDriver {
		return v1alpha1.RBLNDriver{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.RBLNDriverSpec{
				Registry: "repo.rebellions.ai", Image: "rebellions/rbln-driver", Version: version,
				SMD:          &v1alpha1.SMDSpec{Registry: "repo.rebellions.ai", Image: "rebellions/rbln-smd"},
				NodeSelector: sel,
			},
		}
	}
	return []v1alpha1.RBLNDriver{
		d("rbln-driver", "3.2.2", nil),
		d("rbln-driver-atom-canary", "3.3.0-rc1", map[string]string{operator.LabelFamily: "atom", "env": "canary"}),
		d("rbln-driver-rebel", "3.2.2", map[string]string{operator.LabelFamily: "rebel"}),
	}
}

func ExampleRoute() {
	nfd := func(family, env, owner string) map[string]string {
		l := map[string]string{
			operator.LabelDeployDriver: "true",
			operator.LabelFamily:       family,
			operator.LabelOSID:         "ubuntu",
			operator.LabelOSVersion:    "22.04",
			operator.LabelKernel:       "6.8.0-90-generic",
		}
		if env != "" {
			l["env"] = env
		}
		if owner != "" {
			l[operator.LabelOwner] = owner
		}
		return l
	}
	res := routing.Route(multiDriver(), []routing.Node{
		{Name: "npu-2", Labels: nfd("atom", "canary", "rbln-driver")},
		{Name: "npu-1", Labels: nfd("atom", "", "")},
		{Name: "npu-3", Labels: nfd("rebel", "canary", "")},
	}, routing.Options{})

	for _, n := range res.Nodes {
		fmt.Printf("%s owner=%s image=%s\n", n.Name, n.Owner, n.Image)
	}
	for _, p := range res.Pools {
		fmt.Printf("daemonset %s %v\n", p.DaemonSet, p.Nodes)
	}
	// Output:
	// npu-1 owner=rbln-driver image=repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04
	// npu-2 owner=rbln-driver-atom-canary image=repo.rebellions.ai/rebellions/atom/rbln-driver:3.3.0-rc1-6.8.0-90-generic-ubuntu22.04
	// npu-3 owner=rbln-driver-rebel image=repo.rebellions.ai/rebellions/rebel/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04
	// daemonset rbln-driver-atom-ubuntu22.04-6.8.0-90-generic [npu-1]
	// daemonset rbln-driver-atom-canary-atom-ubuntu22.04-6.8.0-90-generic [npu-2]
	// daemonset rbln-driver-rebel-rebel-ubuntu22.04-6.8.0-90-generic [npu-3]
}

func ExampleIndex_Conflicts() {
	nodes := []routing.Node{{Name: "npu-1", Labels: map[string]string{
		operator.LabelDeployDriver: "true", operator.LabelFamily: "atom", "env": "canary", "zone": "a",
	}}}
	ix := routing.NewIndex(multiDriver(), nodes, routing.Options{})

	zone := multiDriver()[1]
	zone.Name = "rbln-driver-zone-a"
	zone.Spec.NodeSelector = map[string]string{operator.LabelFamily: "atom", "zone": "a"}
	rep := ix.Conflicts(zone)
	for _, c := range rep.Ties {
		fmt.Printf("ties with %v on %v\n", c.Resources, c.Nodes)
	}
	for _, p := range rep.Potential {
		fmt.Printf("could tie with %s (identical=%t) on a node labelled %v\n", p.Resource, p.Identical, p.Labels)
	}
	// Output:
	// ties with [rbln-driver-atom-canary rbln-driver-zone-a] on [npu-1]
	// could tie with rbln-driver-atom-canary (identical=false) on a node labelled map[env:canary rebellions.ai/npu.family:atom zone:a]
}

// TestExampleNodes routes examples/nodes.yaml with the drivers of examples/multi-driver.yaml.
func TestExampleNodes(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../examples/nodes.yaml")
	require.NoError(t, err)
	var list struct {
		metav1.TypeMeta `json:",inline"`
		metav1.ListMeta `json:"metadata"`
		Items           []corev1.Node `json:"items"`
	}
	require.NoError(t, yaml.UnmarshalStrict(data, &list))
	require.Equal(t, "List", list.Kind)
	require.Len(t, list.Items, 12)

	res := routing.Route(multiDriver(), routing.NodesFromCore(list.Items), routing.Options{})
	type row struct{ owner, pool, reason string }
	got := map[string]row{}
	for _, n := range res.Nodes {
		got[n.Name] = row{n.Owner, n.Pool, n.Reason}
	}
	rhelPool := "rebel-rhel9.2-5.14.0-284.11.1.el9.2" // the operator's: the architecture removed, '_' turned into '.'
	assert.Equal(t, map[string]row{
		"npu-atom-01":         {"rbln-driver", "atom-ubuntu22.04-6.8.0-90-generic", ""},
		"npu-atom-02":         {"rbln-driver", "atom-ubuntu22.04-6.8.0-90-generic", ""},
		"npu-atom-03":         {"rbln-driver", "atom-ubuntu22.04-6.8.0-94-generic", ""},
		"npu-atom-04":         {"rbln-driver", "atom-ubuntu24.04-6.8.0-45-generic", ""},
		"npu-atom-canary-01":  {"rbln-driver-atom-canary", "atom-ubuntu22.04-6.8.0-90-generic", ""},
		"npu-atom-canary-02":  {"rbln-driver-atom-canary", "atom-ubuntu24.04-6.8.0-45-generic", ""},
		"npu-rebel-01":        {"rbln-driver-rebel", "rebel-ubuntu22.04-6.8.0-90-generic", ""},
		"npu-rebel-02":        {"rbln-driver-rebel", rhelPool, ""},
		"npu-rebel-03":        {"rbln-driver-rebel", "rebel-ubuntu24.04-6.8.0-45-generic", ""},
		"npu-nofamily-01":     {"rbln-driver", "", routing.ReasonDriverFamilyLabelMissing},
		"npu-preinstalled-01": {"", "", routing.ReasonOutOfScope},
		"cpu-worker-01":       {"", "", routing.ReasonOutOfScope},
	}, got)
	assert.Empty(t, res.Conflicts)
	assert.Empty(t, res.Invalid)
	assert.Len(t, res.Pools, 8)
}

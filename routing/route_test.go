package routing

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// want is the expected outcome for one node: owner and reason.
type want struct{ owner, reason string }

func TestRouteOwnership(t *testing.T) {
	t.Parallel()
	def := drv(v1alpha1.DefaultDriverName, nil)
	atom := drv("rbln-driver-atom", famSel("atom"))
	canary := drv("rbln-driver-atom-canary", canarySel())
	zoneA := drv("rbln-driver-zone-a", sel(v1alpha1.LabelFamily, "atom", "zone", "a"))
	zoneCanary := drv("rbln-driver-zone-canary", sel(v1alpha1.LabelFamily, "atom", "env", "canary", "zone", "a"))

	tests := []struct {
		name    string
		drivers []v1alpha1.RBLNDriver
		nodes   []Node
		want    map[string]want
		invalid []string
	}{
		{
			name:    "empty selector is the fallback for every candidate",
			drivers: []v1alpha1.RBLNDriver{def, drv("rbln-driver-rebel", famSel("rebel"))},
			nodes:   []Node{node("a1"), node("r1", v1alpha1.LabelFamily, "rebel"), node("nofam", v1alpha1.LabelFamily, "-")},
			want: map[string]want{
				"a1":    {owner: "rbln-driver"},
				"r1":    {owner: "rbln-driver-rebel"},
				"nofam": {owner: "rbln-driver", reason: ReasonDriverFamilyLabelMissing},
			},
		},
		{
			name:    `selector {env: ""} does not match a node without env`,
			drivers: []v1alpha1.RBLNDriver{drv("rbln-driver-noenv", sel("env", ""))},
			nodes:   []Node{node("without-env"), node("empty-env", "env", ""), node("prod", "env", "prod")},
			want: map[string]want{
				"without-env": {reason: ReasonNoMatchingDriver},
				"empty-env":   {owner: "rbln-driver-noenv"},
				"prod":        {reason: ReasonNoMatchingDriver},
			},
		},
		{
			name:    "chain {} ⊂ {family} ⊂ {family, env}: the most specific wins",
			drivers: []v1alpha1.RBLNDriver{canary, def, atom},
			nodes:   []Node{node("canary", "env", "canary"), node("prod", "env", "prod"), node("rebel", v1alpha1.LabelFamily, "rebel", "env", "canary")},
			want: map[string]want{
				"canary": {owner: "rbln-driver-atom-canary"},
				"prod":   {owner: "rbln-driver-atom"},
				"rebel":  {owner: "rbln-driver"},
			},
		},
		{
			name:    "identical selectors tie",
			drivers: []v1alpha1.RBLNDriver{def, atom, drv("rbln-driver-atom2", famSel("atom"))},
			nodes:   []Node{node("a1"), node("r1", v1alpha1.LabelFamily, "rebel")},
			want: map[string]want{
				"a1": {reason: ReasonConflictingNodeSelector},
				"r1": {owner: "rbln-driver"},
			},
		},
		{
			name:    "incomparable maximal selectors tie",
			drivers: []v1alpha1.RBLNDriver{def, canary, zoneA},
			nodes:   []Node{node("both", "env", "canary", "zone", "a"), node("canary-only", "env", "canary"), node("zone-only", "zone", "a")},
			want: map[string]want{
				"both":        {reason: ReasonConflictingNodeSelector},
				"canary-only": {owner: "rbln-driver-atom-canary"},
				"zone-only":   {owner: "rbln-driver-zone-a"},
			},
		},
		{
			name:    "a strictly larger matching selector still wins over incomparable ones",
			drivers: []v1alpha1.RBLNDriver{def, canary, zoneA, zoneCanary},
			nodes:   []Node{node("both", "env", "canary", "zone", "a", v1alpha1.LabelOwner, "rbln-driver-atom-canary")},
			want:    map[string]want{"both": {owner: "rbln-driver-zone-canary"}},
		},
		{
			name:    "tied node keeps its current owner when it is one of the tied and still matches",
			drivers: []v1alpha1.RBLNDriver{def, canary, zoneA},
			nodes: []Node{
				node("on-canary", "env", "canary", "zone", "a", v1alpha1.LabelOwner, "rbln-driver-atom-canary"),
				node("on-zone", "env", "canary", "zone", "a", v1alpha1.LabelOwner, "rbln-driver-zone-a"),
			},
			want: map[string]want{
				"on-canary": {owner: "rbln-driver-atom-canary", reason: ReasonConflictingNodeSelector},
				"on-zone":   {owner: "rbln-driver-zone-a", reason: ReasonConflictingNodeSelector},
			},
		},
		{
			name:    "tied node keeps the default as current owner because it still matches",
			drivers: []v1alpha1.RBLNDriver{def, canary, zoneA},
			nodes:   []Node{node("on-default", "env", "canary", "zone", "a", v1alpha1.LabelOwner, "rbln-driver")},
			want:    map[string]want{"on-default": {owner: "rbln-driver", reason: ReasonConflictingNodeSelector}},
		},
		{
			name:    "tied node loses a current owner that no longer matches, is unknown or is invalid",
			drivers: []v1alpha1.RBLNDriver{canary, zoneA, drv("rbln-driver-rebel", famSel("rebel")), drv("rbln-driver-bad", sel(v1alpha1.LabelOwner, "x"))},
			nodes: []Node{
				node("was-rebel", "env", "canary", "zone", "a", v1alpha1.LabelOwner, "rbln-driver-rebel"),
				node("was-gone", "env", "canary", "zone", "a", v1alpha1.LabelOwner, "rbln-driver-deleted"),
				node("was-bad", "env", "canary", "zone", "a", v1alpha1.LabelOwner, "rbln-driver-bad"),
				node("was-none", "env", "canary", "zone", "a"),
			},
			want: map[string]want{
				"was-rebel": {reason: ReasonConflictingNodeSelector},
				"was-gone":  {reason: ReasonConflictingNodeSelector},
				"was-bad":   {reason: ReasonConflictingNodeSelector},
				"was-none":  {reason: ReasonConflictingNodeSelector},
			},
			invalid: []string{"rbln-driver-bad"},
		},
		{
			name:    "specificity beats stickiness",
			drivers: []v1alpha1.RBLNDriver{def, atom, canary},
			nodes: []Node{
				node("canary-on-default", "env", "canary", v1alpha1.LabelOwner, "rbln-driver"),
				node("prod-on-canary", v1alpha1.LabelOwner, "rbln-driver-atom-canary"),
			},
			want: map[string]want{
				"canary-on-default": {owner: "rbln-driver-atom-canary"},
				"prod-on-canary":    {owner: "rbln-driver-atom"},
			},
		},
		{
			name:    "nodes without deploy.driver=true are out of scope and lose any owner label",
			drivers: []v1alpha1.RBLNDriver{def},
			nodes: []Node{
				node("pre", v1alpha1.LabelDeployDriver, "pre-installed", v1alpha1.LabelOwner, "rbln-driver"),
				node("false", v1alpha1.LabelDeployDriver, "false"),
				node("upper", v1alpha1.LabelDeployDriver, "True"),
				node("unlabelled", v1alpha1.LabelDeployDriver, "-"),
				{Name: "nil-labels"},
				node("in"),
			},
			want: map[string]want{
				"pre":        {reason: ReasonOutOfScope},
				"false":      {reason: ReasonOutOfScope},
				"upper":      {reason: ReasonOutOfScope},
				"unlabelled": {reason: ReasonOutOfScope},
				"nil-labels": {reason: ReasonOutOfScope},
				"in":         {owner: "rbln-driver"},
			},
		},
		{
			name: "reserved-key resources are excluded without affecting the others",
			drivers: []v1alpha1.RBLNDriver{
				def, atom,
				drv("rbln-driver-owner-key", sel(v1alpha1.LabelFamily, "atom", v1alpha1.LabelOwner, "rbln-driver")),
				drv("rbln-driver-deploy-key", sel(v1alpha1.LabelFamily, "atom", v1alpha1.LabelDeployDriver, "true")),
			},
			nodes: []Node{node("a1"), node("r1", v1alpha1.LabelFamily, "rebel")},
			want: map[string]want{
				"a1": {owner: "rbln-driver-atom"},
				"r1": {owner: "rbln-driver"},
			},
			invalid: []string{"rbln-driver-deploy-key", "rbln-driver-owner-key"},
		},
		{
			name: "bad names, bad label syntax and empty non-default selectors are invalid",
			drivers: []v1alpha1.RBLNDriver{
				def,
				drv("Rbln_Driver", famSel("atom")),
				drv("rbln-driver-badkey", sel("bad key!", "x")),
				drv("rbln-driver-badvalue", sel(v1alpha1.LabelFamily, "atom+")),
				drv("rbln-driver-empty", nil),
				drv("rbln-driver-noversion", famSel("atom")),
			},
			nodes: []Node{node("a1", "bad key!", "x")},
			want:  map[string]want{"a1": {owner: "rbln-driver"}},
			invalid: []string{
				"Rbln_Driver", "rbln-driver-badkey", "rbln-driver-badvalue", "rbln-driver-empty", "rbln-driver-noversion",
			},
		},
		{
			name: "duplicate names: identical copies count once, different specs are invalid",
			drivers: []v1alpha1.RBLNDriver{
				def, def,
				atom, withVersion(atom, "3.3.0"),
			},
			nodes:   []Node{node("a1")},
			want:    map[string]want{"a1": {owner: "rbln-driver"}},
			invalid: []string{"rbln-driver-atom"},
		},
		{
			name:    "no valid driver matches",
			drivers: []v1alpha1.RBLNDriver{drv("rbln-driver-rebel", famSel("rebel"))},
			nodes:   []Node{node("a1", v1alpha1.LabelOwner, "rbln-driver")},
			want:    map[string]want{"a1": {reason: ReasonNoMatchingDriver}},
		},
		{
			name:    "no drivers at all",
			nodes:   []Node{node("a1")},
			want:    map[string]want{"a1": {reason: ReasonNoMatchingDriver}},
			invalid: nil,
		},
	}
	// rbln-driver-noversion needs an empty version to be invalid.
	tests[12].drivers[5].Spec.Version = ""

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := Route(tt.drivers, tt.nodes)
			got := byName(res)
			require.Len(t, res.Nodes, len(tt.nodes))
			for name, w := range tt.want {
				require.Contains(t, got, name)
				assert.Equal(t, w.owner, got[name].Owner, "owner of %s", name)
				assert.Equal(t, w.reason, got[name].Reason, "reason of %s (%s)", name, got[name].Detail)
			}
			var invalid []string
			for _, inv := range res.Invalid {
				assert.Equal(t, ReasonInvalidSpec, inv.Reason)
				assert.NotEmpty(t, inv.Message)
				assert.NotEmpty(t, inv.Errors)
				invalid = append(invalid, inv.Resource)
			}
			assert.Equal(t, tt.invalid, invalid)
		})
	}
}

func TestRouteConflictReporting(t *testing.T) {
	t.Parallel()
	drivers := []v1alpha1.RBLNDriver{
		drv("rbln-driver-d", sel("zone", "a")),
		drv("rbln-driver-b", sel("zone", "b")),
		drv("rbln-driver-a", sel("env", "canary")),
		drv("rbln-driver-c", sel("zone", "a")),
		drv(v1alpha1.DefaultDriverName, nil),
	}
	var nodes []Node
	for i := 24; i >= 0; i-- { // 25 nodes tied between a and b, listed in reverse order
		nodes = append(nodes, node(fmt.Sprintf("n%02d", i), "env", "canary", "zone", "b"))
	}
	for i := range 3 { // identical selectors c and d
		nodes = append(nodes, node(fmt.Sprintf("z%d", i), "zone", "a"))
	}
	nodes = append(nodes, node("all", "env", "canary", "zone", "a"), node("plain"))

	res := Route(drivers, nodes)
	assert.Equal(t, []Conflict{
		{Resources: []string{"rbln-driver-a", "rbln-driver-b"}, Nodes: []string{"n00", "n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09"}, Total: 25},
		{Resources: []string{"rbln-driver-a", "rbln-driver-c", "rbln-driver-d"}, Nodes: []string{"all"}, Total: 1},
		{Resources: []string{"rbln-driver-c", "rbln-driver-d"}, Nodes: []string{"z0", "z1", "z2"}, Total: 3},
	}, res.Conflicts)
	assert.Equal(t, "rbln-driver", byName(res)["plain"].Owner)

	sample, total := res.TiedNodes("rbln-driver-a")
	assert.Equal(t, 26, total)
	assert.Equal(t, []string{"all", "n00", "n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08"}, sample)
	sample, total = res.TiedNodes("rbln-driver-c")
	assert.Equal(t, 4, total)
	assert.Equal(t, []string{"all", "z0", "z1", "z2"}, sample)
	sample, total = res.TiedNodes(v1alpha1.DefaultDriverName)
	assert.Zero(t, total)
	assert.Empty(t, sample)
}

func TestRoutePools(t *testing.T) {
	t.Parallel()
	def := drv(v1alpha1.DefaultDriverName, nil)
	canary := withVersion(drv("rbln-driver-atom-canary", canarySel()), "3.3.0-rc1")
	nodes := []Node{
		node("a1"),
		node("a2"),
		node("a-canary", "env", "canary"),
		node("a-rhel", v1alpha1.LabelOSID, "rhel", v1alpha1.LabelOSVersion, "9.2", v1alpha1.LabelKernel, rhelKernel),
		node("a-aws", v1alpha1.LabelKernel, awsKernel),
		node("a-rpi", v1alpha1.LabelOSID, "debian", v1alpha1.LabelOSVersion, "12", v1alpha1.LabelKernel, rpiKernel),
		node("nofam", v1alpha1.LabelFamily, "-"),
		node("badfam", v1alpha1.LabelFamily, "atom+"),
		node("nokernel", v1alpha1.LabelKernel, "-"),
		node("noos", v1alpha1.LabelOSID, "", v1alpha1.LabelOSVersion, "-"),
		node("odd-family", v1alpha1.LabelFamily, "Atom_X"),
		node("lower-odd-family", v1alpha1.LabelFamily, "atom_x"),
	}
	res := Route([]v1alpha1.RBLNDriver{def, canary}, nodes)
	got := byName(res)

	type nodeWant struct{ owner, pool, image, reason string }
	wantNodes := map[string]nodeWant{
		"a1": {"rbln-driver", "atom-ubuntu22.04-6.8.0-90-generic", "repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04", ""},
		"a-canary": {"rbln-driver-atom-canary", "atom-ubuntu22.04-6.8.0-90-generic",
			"repo.rebellions.ai/rebellions/atom/rbln-driver:3.3.0-rc1-6.8.0-90-generic-ubuntu22.04", ""},
		"a-rhel": {"rbln-driver", PoolLabels{"atom", "rhel", "9.2", rhelKernel}.Name(),
			"repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-5.14.0-284.11.1.el9_2.x86_64-rhel9.2", ""},
		"a-aws": {"rbln-driver", PoolLabels{"atom", "ubuntu", "22.04", awsKernel}.Name(),
			"repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-1015-AWS-ubuntu22.04", ""},
		"a-rpi":      {"rbln-driver", PoolLabels{"atom", "debian", "12", rpiKernel}.Name(), "", ReasonInvalidImageTag},
		"nofam":      {"rbln-driver", "", "", ReasonDriverFamilyLabelMissing},
		"badfam":     {"rbln-driver", "", "", ReasonDriverFamilyLabelMissing},
		"nokernel":   {"rbln-driver", "", "", ReasonInvalidImageTag},
		"noos":       {"rbln-driver", "", "", ReasonInvalidImageTag},
		"odd-family": {"rbln-driver", PoolLabels{"Atom_X", "ubuntu", "22.04", atomKernel}.Name(), "", ReasonInvalidImageTag},
		"lower-odd-family": {"rbln-driver", PoolLabels{"atom_x", "ubuntu", "22.04", atomKernel}.Name(),
			"repo.rebellions.ai/rebellions/atom_x/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04", ""},
	}
	for name, w := range wantNodes {
		n := got[name]
		assert.Equal(t, w, nodeWant{n.Owner, n.Pool, n.Image, n.Reason}, name)
	}
	assert.Contains(t, got["nokernel"].Detail, v1alpha1.LabelKernel)
	assert.Contains(t, got["noos"].Detail, v1alpha1.LabelOSID)
	assert.Contains(t, got["noos"].Detail, v1alpha1.LabelOSVersion)
	assert.Contains(t, got["a-rpi"].Detail, "6.1.0+rpt-rpi-v8")

	// The same pool name under two owners is two DaemonSets.
	var shared []Pool
	for _, p := range res.Pools {
		if p.Name == "atom-ubuntu22.04-6.8.0-90-generic" {
			shared = append(shared, p)
		}
	}
	require.Len(t, shared, 2)
	assert.Equal(t, Pool{
		Name: "atom-ubuntu22.04-6.8.0-90-generic", DaemonSet: "rbln-driver-atom-ubuntu22.04-6.8.0-90-generic",
		Owner: "rbln-driver", Image: "repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04",
		Nodes: []string{"a1", "a2"},
		NodeSelector: map[string]string{
			v1alpha1.LabelFamily: "atom", v1alpha1.LabelOSID: "ubuntu", v1alpha1.LabelOSVersion: "22.04", v1alpha1.LabelKernel: atomKernel,
		},
		Labels: PoolLabels{"atom", "ubuntu", "22.04", atomKernel},
	}, shared[0])
	assert.Equal(t, "rbln-driver-atom-canary", shared[1].Owner)
	assert.Equal(t, []string{"a-canary"}, shared[1].Nodes)
	assert.Equal(t, "rbln-driver-atom-canary-atom-ubuntu22.04-6.8.0-90-generic", shared[1].DaemonSet)

	// Pools with an invalid image are listed, with no image and the reason.
	for _, p := range res.Pools {
		if p.Labels.Kernel == rpiKernel || p.Labels.Family == "Atom_X" {
			assert.Empty(t, p.Image)
			assert.Equal(t, ReasonInvalidImageTag, p.Reason)
			assert.NotEmpty(t, p.Detail)
		} else {
			assert.NotEmpty(t, p.Image)
			assert.Empty(t, p.Reason)
		}
	}

	assert.Equal(t, []SMDDaemonSet{
		{Resource: "rbln-driver", DaemonSet: "rbln-driver-smd", Image: "repo.rebellions.ai/rebellions/rbln-smd:3.2.2"},
		{Resource: "rbln-driver-atom-canary", DaemonSet: "rbln-driver-atom-canary-smd", Image: "repo.rebellions.ai/rebellions/rbln-smd:3.3.0-rc1"},
	}, res.SMD)
}

func TestRouteTiedNodeKeepsPool(t *testing.T) {
	t.Parallel()
	drivers := []v1alpha1.RBLNDriver{drv("rbln-driver-a", sel("env", "canary")), drv("rbln-driver-b", sel("zone", "a"))}
	res := Route(drivers, []Node{node("n1", "env", "canary", "zone", "a", v1alpha1.LabelOwner, "rbln-driver-b")})
	n := res.Nodes[0]
	assert.Equal(t, "rbln-driver-b", n.Owner)
	assert.Equal(t, ReasonConflictingNodeSelector, n.Reason)
	assert.Equal(t, "atom-ubuntu22.04-6.8.0-90-generic", n.Pool)
	require.Len(t, res.Pools, 1)
	assert.Equal(t, []string{"n1"}, res.Pools[0].Nodes)
}

func TestRouteJSONContract(t *testing.T) {
	t.Parallel()
	empty, err := json.Marshal(Route(nil, nil))
	require.NoError(t, err)
	assert.JSONEq(t, `{"nodes":[],"conflicts":[],"invalid":[],"pools":[],"smd":[]}`, string(empty))

	res := Route([]v1alpha1.RBLNDriver{drv(v1alpha1.DefaultDriverName, nil), drv("rbln-driver-x", sel("env", "canary")),
		drv("rbln-driver-y", sel("zone", "a")), drv("rbln-driver-bad", nil)},
		[]Node{node("n1"), node("n2", "env", "canary", "zone", "a"), node("out", v1alpha1.LabelDeployDriver, "pre-installed")})
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	var doc map[string][]map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Len(t, doc["nodes"], 3)
	for _, n := range doc["nodes"] {
		for _, k := range []string{"name", "owner", "pool", "image", "reason"} {
			assert.Contains(t, n, k)
		}
	}
	assert.Equal(t, "n1", doc["nodes"][0]["name"])
	assert.Equal(t, "n2", doc["nodes"][1]["name"])
	assert.Equal(t, ReasonConflictingNodeSelector, doc["nodes"][1]["reason"])
	assert.Equal(t, "", doc["nodes"][1]["owner"])
	assert.Equal(t, ReasonOutOfScope, doc["nodes"][2]["reason"])
	assert.Equal(t, []string{"nodes", "resources", "total"}, keysOf(doc["conflicts"][0]))
	assert.Equal(t, []string{"message", "reason", "resource"}, keysOf(doc["invalid"][0]))
	assert.Equal(t, []string{"daemonSet", "image", "name", "nodeSelector", "nodes", "owner"}, keysOf(doc["pools"][0]))
	assert.Equal(t, ReasonInvalidSpec, doc["invalid"][0]["reason"])
	assert.Equal(t, "rbln-driver-bad", doc["invalid"][0]["resource"])
}

func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

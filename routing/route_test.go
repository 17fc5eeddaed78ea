package routing

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// want is the expected outcome for one node: owner and reason.
type want struct{ owner, reason string }

func TestRouteOwnership(t *testing.T) {
	t.Parallel()
	def := drv(v1alpha1.DefaultDriverName, nil)
	atom := drv("rbln-driver-atom", famSel("atom"))
	canary := drv("rbln-driver-atom-canary", canarySel())
	zoneA := drv("rbln-driver-zone-a", sel(operator.LabelFamily, "atom", "zone", "a"))
	zoneCanary := drv("rbln-driver-zone-canary", sel(operator.LabelFamily, "atom", "env", "canary", "zone", "a"))

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
			nodes:   []Node{node("a1"), node("r1", operator.LabelFamily, "rebel"), node("nofam", operator.LabelFamily, "-")},
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
			nodes:   []Node{node("canary", "env", "canary"), node("prod", "env", "prod"), node("rebel", operator.LabelFamily, "rebel", "env", "canary")},
			want: map[string]want{
				"canary": {owner: "rbln-driver-atom-canary"},
				"prod":   {owner: "rbln-driver-atom"},
				"rebel":  {owner: "rbln-driver"},
			},
		},
		{
			name:    "identical selectors tie",
			drivers: []v1alpha1.RBLNDriver{def, atom, drv("rbln-driver-atom2", famSel("atom"))},
			nodes:   []Node{node("a1"), node("r1", operator.LabelFamily, "rebel")},
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
			nodes:   []Node{node("both", "env", "canary", "zone", "a", operator.LabelOwner, "rbln-driver-atom-canary")},
			want:    map[string]want{"both": {owner: "rbln-driver-zone-canary"}},
		},
		{
			name:    "tied node keeps its current owner when it is one of the tied and still matches",
			drivers: []v1alpha1.RBLNDriver{def, canary, zoneA},
			nodes: []Node{
				node("on-canary", "env", "canary", "zone", "a", operator.LabelOwner, "rbln-driver-atom-canary"),
				node("on-zone", "env", "canary", "zone", "a", operator.LabelOwner, "rbln-driver-zone-a"),
			},
			want: map[string]want{
				"on-canary": {owner: "rbln-driver-atom-canary", reason: ReasonConflictingNodeSelector},
				"on-zone":   {owner: "rbln-driver-zone-a", reason: ReasonConflictingNodeSelector},
			},
		},
		{
			name:    "tied node keeps the default as current owner because it still matches",
			drivers: []v1alpha1.RBLNDriver{def, canary, zoneA},
			nodes:   []Node{node("on-default", "env", "canary", "zone", "a", operator.LabelOwner, "rbln-driver")},
			want:    map[string]want{"on-default": {owner: "rbln-driver", reason: ReasonConflictingNodeSelector}},
		},
		{
			name:    "tied node loses a current owner that no longer matches, is unknown or is invalid",
			drivers: []v1alpha1.RBLNDriver{canary, zoneA, drv("rbln-driver-rebel", famSel("rebel")), drv("rbln-driver-bad", sel(operator.LabelOwner, "x"))},
			nodes: []Node{
				node("was-rebel", "env", "canary", "zone", "a", operator.LabelOwner, "rbln-driver-rebel"),
				node("was-gone", "env", "canary", "zone", "a", operator.LabelOwner, "rbln-driver-deleted"),
				node("was-bad", "env", "canary", "zone", "a", operator.LabelOwner, "rbln-driver-bad"),
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
				node("canary-on-default", "env", "canary", operator.LabelOwner, "rbln-driver"),
				node("prod-on-canary", operator.LabelOwner, "rbln-driver-atom-canary"),
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
				node("pre", operator.LabelDeployDriver, "pre-installed", operator.LabelOwner, "rbln-driver"),
				node("false", operator.LabelDeployDriver, "false"),
				node("upper", operator.LabelDeployDriver, "True"),
				node("unlabelled", operator.LabelDeployDriver, "-"),
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
				drv("rbln-driver-owner-key", sel(operator.LabelFamily, "atom", operator.LabelOwner, "rbln-driver")),
				drv("rbln-driver-deploy-key", sel(operator.LabelFamily, "atom", operator.LabelDeployDriver, "true")),
			},
			nodes: []Node{node("a1"), node("r1", operator.LabelFamily, "rebel")},
			want: map[string]want{
				"a1": {owner: "rbln-driver-atom"},
				"r1": {owner: "rbln-driver"},
			},
			invalid: []string{"rbln-driver-deploy-key", "rbln-driver-owner-key"},
		},
		{
			name: "driverguard's syntax rules exclude nothing from the operator's routing (the webhook refuses such drivers)",
			drivers: []v1alpha1.RBLNDriver{
				def,
				drv("Rbln_Driver", famSel("atom")),
				drv("rbln-driver-badkey", sel("bad key!", "x")),
				drv("rbln-driver-badvalue", sel(operator.LabelFamily, "atom+")),
				drv("rbln-driver-empty", nil),
				drv("rbln-driver-noversion", famSel("atom")),
			},
			nodes: []Node{node("a1", "bad key!", "x"), node("r1", operator.LabelFamily, "rebel")},
			want: map[string]want{
				// the maximal matches {family: atom} (twice) and {bad key!: x} tie
				"a1": {reason: ReasonConflictingNodeSelector},
				// two empty selectors tie as well: rbln-driver-empty is a second fallback
				"r1": {reason: ReasonConflictingNodeSelector},
			},
			invalid: nil,
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
			nodes:   []Node{node("a1", operator.LabelOwner, "rbln-driver")},
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
			res := Route(tt.drivers, tt.nodes, Options{})
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

	res := Route(drivers, nodes, Options{})
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
		node("a-rhel", operator.LabelOSID, "rhel", operator.LabelOSVersion, "9.2", operator.LabelKernel, rhelKernel),
		node("a-aws", operator.LabelKernel, awsKernel),
		node("a-rpi", operator.LabelOSID, "debian", operator.LabelOSVersion, "12", operator.LabelKernel, rpiKernel),
		node("nofam", operator.LabelFamily, "-"),
		node("badfam", operator.LabelFamily, "atom+"),
		node("upperfam", operator.LabelFamily, "Atom"),
		node("nokernel", operator.LabelKernel, "-"),
		node("noos", operator.LabelOSID, "-", operator.LabelOSVersion, "-"),
		node("nokernel-nofam", operator.LabelKernel, "-", operator.LabelFamily, "-"),
		node("emptykernel", operator.LabelOSID, "rocky", operator.LabelKernel, ""),
		node("lower-odd-family", operator.LabelFamily, "atom_x"),
	}
	res := Route([]v1alpha1.RBLNDriver{def, canary}, nodes, Options{})
	got := byName(res)

	type nodeWant struct{ owner, pool, image, reason string }
	wantNodes := map[string]nodeWant{
		"a1": {"rbln-driver", "atom-ubuntu22.04-6.8.0-90-generic", "repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04", ""},
		"a-canary": {"rbln-driver-atom-canary", "atom-ubuntu22.04-6.8.0-90-generic",
			"repo.rebellions.ai/rebellions/atom/rbln-driver:3.3.0-rc1-6.8.0-90-generic-ubuntu22.04", ""},
		// the operator's pool name: architecture removed, '_' to '.', lowercased; the tag keeps the raw kernel
		"a-rhel": {"rbln-driver", "atom-rhel9.2-5.14.0-284.11.1.el9.2",
			"repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-5.14.0-284.11.1.el9_2.x86_64-rhel9.2", ""},
		"a-aws": {"rbln-driver", "atom-ubuntu22.04-6.8.0-1015-aws",
			"repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-1015-AWS-ubuntu22.04", ""},
		// '+' is neither a label value nor a tag: the operator's DaemonSet is refused first
		"a-rpi":            {"rbln-driver", "atom-debian12-6.1.0+rpt-rpi-v8", "", ReasonDaemonSetNotCreated},
		"nofam":            {"rbln-driver", "", "", ReasonDriverFamilyLabelMissing},
		"badfam":           {"rbln-driver", "", "", ReasonDriverFamilyLabelMissing},
		"upperfam":         {"rbln-driver", "", "", ReasonDriverFamilyLabelMissing},
		"lower-odd-family": {"rbln-driver", "", "", ReasonDriverFamilyLabelMissing},
		"nokernel":         {"rbln-driver", "", "", ReasonNFDLabelMissing},
		"noos":             {"rbln-driver", "", "", ReasonNFDLabelMissing},
		"nokernel-nofam":   {"rbln-driver", "", "", ReasonNFDLabelMissing},
		// an empty kernel is accepted into a pool, but the operator cannot compose its image
		"emptykernel": {"rbln-driver", "atom-rocky22.04-", "", ReasonDaemonSetNotCreated},
	}
	for name, w := range wantNodes {
		n := got[name]
		assert.Equal(t, w, nodeWant{n.Owner, n.Pool, n.Image, n.Reason}, name)
	}
	assert.Contains(t, got["nokernel"].Detail, operator.LabelKernel)
	assert.Contains(t, got["nokernel"].Detail, "install Node Feature Discovery")
	assert.Contains(t, got["noos"].Detail, operator.LabelOSID)
	assert.Contains(t, got["upperfam"].Detail, `"Atom" is not a DNS-1123 label`)
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
			operator.LabelDeployDriver: "true", operator.LabelOwner: "rbln-driver",
			operator.LabelFamily: "atom", operator.LabelOSID: "ubuntu", operator.LabelOSVersion: "22.04", operator.LabelKernel: atomKernel,
		},
		Labels: operator.Pool{Name: "atom-ubuntu22.04-6.8.0-90-generic", Family: "atom", OSID: "ubuntu", OSVersion: "22.04", Kernel: atomKernel},
	}, shared[0])
	assert.Equal(t, "rbln-driver-atom-canary", shared[1].Owner)
	assert.Equal(t, []string{"a-canary"}, shared[1].Nodes)
	assert.Equal(t, "rbln-driver-atom-canary-atom-ubuntu22.04-6.8.0-90-generic", shared[1].DaemonSet)

	// Pools the operator cannot create are listed, with the reason.
	for _, p := range res.Pools {
		if p.Labels.Kernel == rpiKernel || p.Labels.Kernel == "" {
			assert.Empty(t, p.Image)
			assert.Equal(t, ReasonDaemonSetNotCreated, p.Reason, p.Name)
			assert.NotEmpty(t, p.Detail)
		} else {
			assert.NotEmpty(t, p.Image)
			assert.Empty(t, p.Reason, p.Name)
		}
	}

	assert.Equal(t, []SMDDaemonSet{
		{Resource: "rbln-driver", DaemonSet: "rbln-driver-smd", Image: "repo.rebellions.ai/rebellions/rbln-smd:3.2.2"},
		{Resource: "rbln-driver-atom-canary", DaemonSet: "rbln-driver-atom-canary-smd", Image: "repo.rebellions.ai/rebellions/rbln-smd:3.3.0-rc1"},
	}, res.SMD)
}

func TestRoutePoolNameCollision(t *testing.T) {
	t.Parallel()
	// One RHEL kernel built for x86_64 and aarch64: one pool name. The first node by name
	// defines the pool; the DaemonSet selects its kernel only.
	x86 := "5.14.0-427.13.1.el9_4.x86_64"
	arm := "5.14.0-427.13.1.el9_4.aarch64"
	nodes := []Node{
		node("n2-x86", operator.LabelOSID, "rhel", operator.LabelOSVersion, "9.4", operator.LabelKernel, x86),
		node("n1-arm", operator.LabelOSID, "rhel", operator.LabelOSVersion, "9.4", operator.LabelKernel, arm),
		node("n3-arm", operator.LabelOSID, "rhel", operator.LabelOSVersion, "9.4", operator.LabelKernel, arm),
	}
	res := Route([]v1alpha1.RBLNDriver{drv(v1alpha1.DefaultDriverName, nil)}, nodes, Options{})
	got := byName(res)
	require.Len(t, res.Pools, 1)
	p := res.Pools[0]
	assert.Equal(t, "atom-rhel9.4-5.14.0-427.13.1.el9.4", p.Name)
	assert.Equal(t, []string{"n1-arm", "n3-arm"}, p.Nodes)
	assert.Equal(t, arm, p.NodeSelector[operator.LabelKernel])
	assert.Equal(t, ReasonPoolNameCollision, got["n2-x86"].Reason)
	assert.Empty(t, got["n2-x86"].Pool)
	assert.Equal(t, "rbln-driver", got["n2-x86"].Owner, "it keeps its owner")
	assert.Contains(t, got["n2-x86"].Detail, "node n1-arm")
	drift := NodeDrift(res, nodes)
	assert.True(t, slices.ContainsFunc(drift, func(d Drift) bool { return d.Node == "n2-x86" && d.Kind == DriftPoolNameCollision }))
}

func TestRouteDaemonSetNameCollision(t *testing.T) {
	t.Parallel()
	// driver "rbln-driver" on family "atom-x" and "rbln-driver-atom" on family "x" compose the
	// same DaemonSet name.
	a := drv("rbln-driver", famSel("atom-x"))
	b := drv("rbln-driver-atom", famSel("x"))
	nodes := []Node{node("n1", operator.LabelFamily, "atom-x"), node("n2", operator.LabelFamily, "x")}
	res := Route([]v1alpha1.RBLNDriver{a, b}, nodes, Options{})
	require.Len(t, res.Pools, 2)
	assert.Equal(t, res.Pools[0].DaemonSet, res.Pools[1].DaemonSet)
	for _, p := range res.Pools {
		assert.Equal(t, ReasonDaemonSetNotCreated, p.Reason)
		assert.Contains(t, p.Detail, "name collision")
	}
	for _, n := range res.Nodes {
		assert.Equal(t, ReasonDaemonSetNotCreated, n.Reason, n.Name)
	}
}

func TestRouteRDS(t *testing.T) {
	t.Parallel()
	nodes := []Node{node("plain"), node("rds", operator.LabelRDSPresent, "true")}
	drivers := []v1alpha1.RBLNDriver{drv(v1alpha1.DefaultDriverName, nil)}

	off := Route(drivers, nodes, Options{})
	require.Len(t, off.Pools, 1, "without rds.enabled one pool")
	assert.Equal(t, []string{"plain", "rds"}, off.Pools[0].Nodes)

	on := Route(drivers, nodes, OptionsFor(&v1alpha1.RBLNClusterPolicy{Spec: v1alpha1.RBLNClusterPolicySpec{RDS: &v1alpha1.RDSSpec{Enabled: true}}}))
	require.Len(t, on.Pools, 2)
	assert.Equal(t, "atom-ubuntu22.04-6.8.0-90-generic", on.Pools[0].Name)
	assert.Equal(t, "atom-ubuntu22.04-6.8.0-90-generic-rds", on.Pools[1].Name)
	assert.Equal(t, "rbln-driver-atom-ubuntu22.04-6.8.0-90-generic-rds", on.Pools[1].DaemonSet)
	assert.Equal(t, "true", on.Pools[1].NodeSelector[operator.LabelRDSPresent])
	assert.NotContains(t, on.Pools[0].NodeSelector, operator.LabelRDSPresent)
	assert.Equal(t, on.Pools[0].Image, on.Pools[1].Image, "one image for both")
}

func TestRouteExcludesOnlyWhatTheOperatorExcludes(t *testing.T) {
	t.Parallel()
	deleting := drv("rbln-driver-going", famSel("atom"))
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	reserved := drv("rbln-driver-reserved", sel(operator.LabelOwner, "x"))
	fallback := drv("rbln-driver-fallback", nil) // an empty selector: driverguard refuses it, the operator routes it
	res := Route([]v1alpha1.RBLNDriver{deleting, reserved, fallback}, []Node{node("n1")}, Options{})
	assert.Equal(t, []string{"rbln-driver-going", "rbln-driver-reserved"}, []string{res.Invalid[0].Resource, res.Invalid[1].Resource})
	assert.Equal(t, ReasonBeingDeleted, res.Invalid[0].Reason)
	assert.Equal(t, ReasonInvalidSpec, res.Invalid[1].Reason)
	assert.Contains(t, res.Invalid[1].Message, "the operator manages it itself")
	assert.Equal(t, "rbln-driver-fallback", res.Nodes[0].Owner)
}

func TestRouteOutOfScopeOwnerLabelGoes(t *testing.T) {
	t.Parallel()
	n := node("n1", operator.LabelDeployDriver, "pre-installed", operator.LabelOwner, "rbln-driver")
	res := Route([]v1alpha1.RBLNDriver{drv(v1alpha1.DefaultDriverName, nil)}, []Node{n}, Options{})
	assert.Equal(t, ReasonOutOfScope, res.Nodes[0].Reason)
	assert.Contains(t, res.Nodes[0].Detail, "removes its rebellions.ai/npu.driver.owner label")
	drift := NodeDrift(res, []Node{n})
	require.Len(t, drift, 1)
	assert.Equal(t, DriftStaleOwnerLabel, drift[0].Kind)
	assert.Contains(t, drift[0].Detail, "loses its driver")
}

func TestRouteTiedNodeKeepsPool(t *testing.T) {
	t.Parallel()
	drivers := []v1alpha1.RBLNDriver{drv("rbln-driver-a", sel("env", "canary")), drv("rbln-driver-b", sel("zone", "a"))}
	res := Route(drivers, []Node{node("n1", "env", "canary", "zone", "a", operator.LabelOwner, "rbln-driver-b")}, Options{})
	n := res.Nodes[0]
	assert.Equal(t, "rbln-driver-b", n.Owner)
	assert.Equal(t, ReasonConflictingNodeSelector, n.Reason)
	assert.Equal(t, "atom-ubuntu22.04-6.8.0-90-generic", n.Pool)
	require.Len(t, res.Pools, 1)
	assert.Equal(t, []string{"n1"}, res.Pools[0].Nodes)
}

func TestRouteJSONContract(t *testing.T) {
	t.Parallel()
	empty, err := json.Marshal(Route(nil, nil, Options{}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"nodes":[],"conflicts":[],"invalid":[],"pools":[],"smd":[]}`, string(empty))

	res := Route([]v1alpha1.RBLNDriver{drv(v1alpha1.DefaultDriverName, nil), drv("rbln-driver-x", sel("env", "canary")),
		drv("rbln-driver-y", sel("zone", "a")), drv("rbln-driver-bad", sel(operator.LabelDeployDriver, "true"))}, []Node{node("n1"), node("n2", "env", "canary", "zone", "a"), node("out", operator.LabelDeployDriver, "pre-installed")}, Options{})

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

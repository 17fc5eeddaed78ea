package operator_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/operator"
)

func TestSanitizeKernel(t *testing.T) {
	for _, tc := range []struct{ kernel, want string }{
		{"6.8.0-90-generic", "6.8.0-90-generic"},                       // Ubuntu
		{"5.15.0-1034-azure", "5.15.0-1034-azure"},                     // Azure
		{"6.8.0-1021-aws", "6.8.0-1021-aws"},                           // AWS Ubuntu
		{"5.14.0-427.13.1.el9_4.x86_64", "5.14.0-427.13.1.el9.4"},      // RHEL 9.4
		{"5.14.0-284.11.1.el9_2.x86_64", "5.14.0-284.11.1.el9.2"},      // RHEL 9.2
		{"5.14.0-503.11.1.el9_5.aarch64_64k", "5.14.0-503.11.1.el9.5"}, // Rocky 9.5, 64k pages
		{"5.14.0-427.13.1.el9_4.aarch64", "5.14.0-427.13.1.el9.4"},     // same kernel, arm
		{"4.18.0-553.el8_10.x86_64", "4.18.0-553.el8.10"},              // Rocky 8.10
		{"5.10.219-208.866.amzn2.x86_64", "5.10.219-208.866.amzn2"},    // Amazon Linux 2
		{"6.1.94-99.176.amzn2023.x86_64", "6.1.94-99.176.amzn2023"},    // Amazon Linux 2023
		{"6.1.0-28-cloud-amd64", "6.1.0-28-cloud-amd64"},               // Debian cloud
		{"5.15.0-1034-Azure", "5.15.0-1034-azure"},                     // lowercased
		{"6.6.0-x86_64_64k-debug", "6.6.0--debug"},                     // _64k goes with the arch
		{"5.4.0__", "5.4.0."},                                          // one trailing '.' trimmed
		{"x86_64", ""},                                                 // nothing left
		{"6.1.0+rpt-rpi-v8", "6.1.0+rpt-rpi-v8"},                       // '+' kept (not a label value)
	} {
		assert.Equal(t, tc.want, operator.SanitizeKernel(tc.kernel), tc.kernel)
	}
}

func nodeLabels(family, id, version, kernel string) map[string]string {
	return map[string]string{
		operator.LabelDeployDriver: "true",
		operator.LabelFamily:       family,
		operator.LabelOSID:         id,
		operator.LabelOSVersion:    version,
		operator.LabelKernel:       kernel,
	}
}

func TestPoolOf(t *testing.T) {
	without := func(l map[string]string, key string) map[string]string { delete(l, key); return l }
	with := func(l map[string]string, key, v string) map[string]string { l[key] = v; return l }
	rhel := "5.14.0-427.13.1.el9_4.x86_64"
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		rds     bool
		want    string
		problem operator.PoolProblem
		label   string
	}{
		{name: "ubuntu", labels: nodeLabels("atom", "ubuntu", "22.04", "6.8.0-90-generic"), want: "atom-ubuntu22.04-6.8.0-90-generic"},
		{name: "rhel with arch and underscore", labels: nodeLabels("rebel100", "rhel", "9.4", rhel), want: "rebel100-rhel9.4-5.14.0-427.13.1.el9.4"},
		{name: "rocky 64k", labels: nodeLabels("atom", "rocky", "9.5", "5.14.0-503.11.1.el9_5.aarch64_64k"), want: "atom-rocky9.5-5.14.0-503.11.1.el9.5"},
		{name: "amazon linux", labels: nodeLabels("atom", "amzn", "2023", "6.1.94-99.176.amzn2023.x86_64"), want: "atom-amzn2023-6.1.94-99.176.amzn2023"},
		{name: "family trimmed", labels: nodeLabels("  atom ", "ubuntu", "22.04", "6.8.0-90-generic"), want: "atom-ubuntu22.04-6.8.0-90-generic"},
		{name: "empty NFD values are accepted", labels: nodeLabels("atom", "", "", "6.8.0"), want: "atom--6.8.0"},
		{name: "missing OS ID", labels: without(nodeLabels("atom", "ubuntu", "22.04", "6.8.0"), operator.LabelOSID), problem: operator.NFDLabelMissing, label: operator.LabelOSID},
		{name: "missing VERSION_ID", labels: without(nodeLabels("atom", "ubuntu", "22.04", "6.8.0"), operator.LabelOSVersion), problem: operator.NFDLabelMissing, label: operator.LabelOSVersion},
		{name: "missing kernel", labels: without(nodeLabels("atom", "ubuntu", "22.04", "6.8.0"), operator.LabelKernel), problem: operator.NFDLabelMissing, label: operator.LabelKernel},
		{name: "NFD is read before the family", labels: without(without(nodeLabels("atom", "ubuntu", "22.04", "6.8.0"), operator.LabelKernel), operator.LabelFamily), problem: operator.NFDLabelMissing, label: operator.LabelKernel},
		{name: "missing family", labels: without(nodeLabels("atom", "ubuntu", "22.04", "6.8.0"), operator.LabelFamily), problem: operator.FamilyMissing, label: operator.LabelFamily},
		{name: "empty family", labels: nodeLabels("", "ubuntu", "22.04", "6.8.0"), problem: operator.FamilyInvalid},
		{name: "uppercase family is not lowercased", labels: nodeLabels("Atom", "ubuntu", "22.04", "6.8.0"), problem: operator.FamilyInvalid},
		{name: "family with underscore", labels: nodeLabels("atom_x", "ubuntu", "22.04", "6.8.0"), problem: operator.FamilyInvalid},
		{name: "family with a dot", labels: nodeLabels("atom.x", "ubuntu", "22.04", "6.8.0"), problem: operator.FamilyInvalid},
		// "-ubuntu22.04-6.8.0-90-generic" is 29 characters: a 34-character family makes 63.
		{name: "pool name of exactly 63", labels: nodeLabels(strings.Repeat("a", 34), "ubuntu", "22.04", "6.8.0-90-generic"), want: strings.Repeat("a", 34) + "-ubuntu22.04-6.8.0-90-generic"},
		{name: "pool name of 64", labels: nodeLabels(strings.Repeat("a", 35), "ubuntu", "22.04", "6.8.0-90-generic"), problem: operator.FamilyTooLong},
		{name: "rds disabled: rds.present ignored", labels: with(nodeLabels("atom", "ubuntu", "22.04", "6.8.0-90-generic"), operator.LabelRDSPresent, "true"), want: "atom-ubuntu22.04-6.8.0-90-generic"},
		{name: "rds pool", labels: with(nodeLabels("atom", "ubuntu", "22.04", "6.8.0-90-generic"), operator.LabelRDSPresent, "true"), rds: true, want: "atom-ubuntu22.04-6.8.0-90-generic-rds"},
		{name: "rds enabled, node without rds", labels: nodeLabels("atom", "ubuntu", "22.04", "6.8.0-90-generic"), rds: true, want: "atom-ubuntu22.04-6.8.0-90-generic"},
		{name: "rds.present other than true", labels: with(nodeLabels("atom", "ubuntu", "22.04", "6.8.0-90-generic"), operator.LabelRDSPresent, "True"), rds: true, want: "atom-ubuntu22.04-6.8.0-90-generic"},
		{name: "rds pool of exactly 63", labels: with(nodeLabels(strings.Repeat("a", 30), "ubuntu", "22.04", "6.8.0-90-generic"), operator.LabelRDSPresent, "true"), rds: true, want: strings.Repeat("a", 30) + "-ubuntu22.04-6.8.0-90-generic-rds"},
		{name: "rds limit is 59 before the suffix", labels: with(nodeLabels(strings.Repeat("a", 31), "ubuntu", "22.04", "6.8.0-90-generic"), operator.LabelRDSPresent, "true"), rds: true, problem: operator.FamilyTooLong},
		{name: "the same family fits a base pool", labels: nodeLabels(strings.Repeat("a", 31), "ubuntu", "22.04", "6.8.0-90-generic"), rds: true, want: strings.Repeat("a", 31) + "-ubuntu22.04-6.8.0-90-generic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := operator.PoolOf(tc.labels, tc.rds)
			if tc.problem != 0 {
				require.NotNil(t, err)
				assert.Equal(t, tc.problem, err.Problem)
				if tc.label != "" {
					assert.Equal(t, tc.label, err.Label)
				}
				assert.NotEmpty(t, err.Error())
				return
			}
			require.Nil(t, err)
			assert.Equal(t, tc.want, p.Name)
			assert.LessOrEqual(t, len(p.Name), operator.MaxPoolNameLength)
		})
	}
}

func TestPoolErrorMessages(t *testing.T) {
	_, err := operator.PoolOf(map[string]string{operator.LabelFamily: "atom"}, false)
	require.NotNil(t, err)
	assert.Contains(t, err.Error(), "install Node Feature Discovery")
	assert.False(t, err.FamilyProblem())

	_, err = operator.PoolOf(nodeLabels("Atom", "ubuntu", "22.04", "6.8.0"), false)
	require.NotNil(t, err)
	assert.Contains(t, err.Error(), `rebellions.ai/npu.family="Atom" is not a DNS-1123 label`)
	assert.Contains(t, err.Error(), "DriverFamilyLabelMissing")
	assert.True(t, err.FamilyProblem())

	_, err = operator.PoolOf(nodeLabels(strings.Repeat("a", 40), "ubuntu", "22.04", "6.8.0-90-generic"), false)
	require.NotNil(t, err)
	assert.Contains(t, err.Error(), "69 characters, longer than the 63")
}

func TestPoolNodeSelector(t *testing.T) {
	p, err := operator.PoolOf(nodeLabels(" atom", "rhel", "9.4", "5.14.0-427.13.1.el9_4.x86_64"), false)
	require.Nil(t, err)
	assert.Equal(t, map[string]string{
		operator.LabelDeployDriver: "true",
		operator.LabelOwner:        "rbln-driver",
		operator.LabelOSID:         "rhel",
		operator.LabelOSVersion:    "9.4",
		operator.LabelKernel:       "5.14.0-427.13.1.el9_4.x86_64", // raw
		operator.LabelFamily:       "atom",                         // trimmed
	}, p.NodeSelector("rbln-driver"))

	rds, err := operator.PoolOf(map[string]string{operator.LabelFamily: "atom", operator.LabelOSID: "ubuntu", operator.LabelOSVersion: "22.04", operator.LabelKernel: "6.8.0-90-generic", operator.LabelRDSPresent: "true"}, true)
	require.Nil(t, err)
	assert.Equal(t, "true", rds.NodeSelector("x")[operator.LabelRDSPresent])
}

func TestPoolSetFirstNodeDefinesThePool(t *testing.T) {
	x86, err := operator.PoolOf(nodeLabels("atom", "rhel", "9.4", "5.14.0-427.13.1.el9_4.x86_64"), false)
	require.Nil(t, err)
	arm, err := operator.PoolOf(nodeLabels("atom", "rhel", "9.4", "5.14.0-427.13.1.el9_4.aarch64"), false)
	require.Nil(t, err)
	require.Equal(t, x86.Name, arm.Name, "both architectures compose one pool name")

	var s operator.PoolSet
	d, collides := s.Add(arm)
	assert.Equal(t, arm, d)
	assert.False(t, collides)
	d, collides = s.Add(x86)
	assert.Equal(t, arm, d, "the first node defines the pool")
	assert.True(t, collides)
	d, collides = s.Add(arm)
	assert.Equal(t, arm, d)
	assert.False(t, collides)
}

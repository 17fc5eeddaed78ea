package routing

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

var hashSuffix = regexp.MustCompile(`-[0-9a-f]{10}$`)

func TestPoolName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		labels PoolLabels
		want   string // exact name, or the sanitised prefix when hashed
		hashed bool
	}{
		{"canonical ubuntu", PoolLabels{"atom", "ubuntu", "22.04", atomKernel}, "atom-ubuntu22.04-6.8.0-90-generic", false},
		{"canonical ubuntu 24.04", PoolLabels{"rebel", "ubuntu", "24.04", "6.8.0-45-generic"}, "rebel-ubuntu24.04-6.8.0-45-generic", false},
		{"rhel kernel with underscores", PoolLabels{"atom", "rhel", "9.2", rhelKernel}, "atom-rhel9.2-5.14.0-284.11.1.el9-2.x86-64", true},
		{"uppercase kernel", PoolLabels{"atom", "ubuntu", "22.04", awsKernel}, "atom-ubuntu22.04-6.8.0-1015-aws", true},
		{"kernel with plus", PoolLabels{"atom", "debian", "12", rpiKernel}, "atom-debian12-6.1.0-rpt-rpi-v8", true},
		{"non-DNS family", PoolLabels{"Atom_X", "ubuntu", "22.04", atomKernel}, "atom-x-ubuntu22.04-6.8.0-90-generic", true},
		{"family with a dash", PoolLabels{"atom-max", "ubuntu", "22.04", atomKernel}, "atom-max-ubuntu22.04-6.8.0-90-generic", true},
		{"family with a dot", PoolLabels{"atom.v2", "ubuntu", "22.04", atomKernel}, "atom.v2-ubuntu22.04-6.8.0-90-generic", true},
		{"os with a dash", PoolLabels{"atom", "opensuse-leap", "15.5", "6.4.0-150600.23.25-default"}, "atom-opensuse-leap15.5-6.4.0-150600.23.25-default", true},
		{"version not starting with a digit", PoolLabels{"atom", "ubuntu", "v22", atomKernel}, "atom-ubuntuv22-6.8.0-90-generic", true},
		{"dots next to separators", PoolLabels{"atom", "ubuntu", "22.04", "._x_.y."}, "atom-ubuntu22.04---x--y", true},
		{"non-ASCII", PoolLabels{"atöm", "ubuntu", "22.04", atomKernel}, "at--m-ubuntu22.04-6.8.0-90-generic", true},
		{"very long", PoolLabels{strings.Repeat("a", 63), "ubuntu", "22.04", strings.Repeat("k", 200)}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.labels.Name()
			assert.Empty(t, utilvalidation.IsDNS1123Subdomain(got), "%q must be a DNS-1123 subdomain", got)
			assert.Equal(t, got, tt.labels.Name(), "stable")
			if !tt.hashed {
				assert.Equal(t, tt.want, got)
				return
			}
			assert.Regexp(t, hashSuffix, got)
			if tt.want != "" {
				assert.Equal(t, tt.want, hashSuffix.ReplaceAllString(got, ""))
			}
		})
	}
}

func TestPoolNamesNeverCollide(t *testing.T) {
	t.Parallel()
	// Raw label tuples that sanitise or concatenate to the same string.
	pools := []PoolLabels{
		{"atom", "rhel", "9.2", "5.14.0-284.11.1.el9_2.x86_64"},
		{"atom", "rhel", "9.2", "5.14.0-284.11.1.el9-2.x86-64"},
		{"atom", "ubuntu", "22.04", "6.8.0-1015-AWS"},
		{"atom", "ubuntu", "22.04", "6.8.0-1015-aws"},
		{"Atom", "ubuntu", "22.04", atomKernel},
		{"atom", "ubuntu", "22.04", atomKernel},
		{"atom", "ubuntu2", "2.04", atomKernel},
		{"atom", "ubuntu", "22.04", "6.1.0+rpt"},
		{"atom", "ubuntu", "22.04", "6.1.0-rpt"},
		{"atom-b", "ubuntu", "22.04", atomKernel},
		{"atom", "b-ubuntu", "22.04", atomKernel},
		{"atom", "ubuntu", "22.04-6.8.0", "90-generic"},
		{"atom_x", "ubuntu", "22.04", atomKernel},
		{"atom-x", "ubuntu", "22.04", atomKernel},
	}
	seen := map[string]PoolLabels{}
	for _, p := range pools {
		name := p.Name()
		if other, dup := seen[name]; dup {
			t.Errorf("pools %+v and %+v share the name %q", p, other, name)
		}
		seen[name] = p
	}
}

func TestDaemonSetName(t *testing.T) {
	t.Parallel()
	short := PoolLabels{"atom", "ubuntu", "22.04", atomKernel}
	assert.Equal(t, "rbln-driver-atom-ubuntu22.04-6.8.0-90-generic", DaemonSetName("rbln-driver", short))

	// A 52-character resource name (the longest instance key) pushes every name past 63.
	long := "rbln-driver-" + strings.Repeat("k", 40)
	seen := map[string]string{}
	kernels := []string{atomKernel, "6.8.0-91-generic", "6.8.0-90-generic-64k", rhelKernel, awsKernel, "6.8.0-1015-aws"}
	for _, cr := range []string{long, long[:len(long)-1], "rbln-driver-atom-canary", "rbln-driver"} {
		for _, fam := range []string{"atom", "rebel", "Atom_X"} {
			for _, k := range kernels {
				for _, osv := range [][2]string{{"ubuntu", "22.04"}, {"ubuntu", "24.04"}, {"rhel", "9.2"}} {
					p := PoolLabels{fam, osv[0], osv[1], k}
					name := DaemonSetName(cr, p)
					assert.LessOrEqual(t, len(name), MaxDaemonSetNameLength, name)
					assert.Empty(t, utilvalidation.IsDNS1123Subdomain(name), name)
					assert.Equal(t, name, DaemonSetName(cr, p), "stable")
					if full := cr + "-" + p.Name(); len(full) > MaxDaemonSetNameLength {
						assert.Regexp(t, hashSuffix, name)
						assert.True(t, strings.HasPrefix(full, strings.TrimSuffix(hashSuffix.ReplaceAllString(name, ""), "-")))
					} else {
						assert.Equal(t, full, name)
					}
					id := cr + "|" + p.key()
					if prev, dup := seen[name]; dup {
						t.Errorf("DaemonSet name %q used by %s and %s", name, prev, id)
					}
					seen[name] = id
				}
			}
		}
	}

	assert.Equal(t, "rbln-driver-smd", SMDDaemonSetName("rbln-driver"))
	smd := SMDDaemonSetName(strings.Repeat("x", 61))
	assert.Len(t, smd, MaxDaemonSetNameLength)
	assert.Regexp(t, hashSuffix, smd)
}

func TestRouteHashedDaemonSetsDoNotCollide(t *testing.T) {
	t.Parallel()
	long := "rbln-driver-" + strings.Repeat("k", 40)
	d := drv(long, sel("zone", "a"))
	var nodes []Node
	for i := range 40 {
		nodes = append(nodes, node(fmt.Sprintf("n%02d", i), "zone", "a", v1alpha1.LabelKernel, fmt.Sprintf("6.8.0-%d-generic", i)))
	}
	res := Route([]v1alpha1.RBLNDriver{d}, nodes)
	require.Len(t, res.Pools, 40)
	seen := map[string]bool{}
	for _, p := range res.Pools {
		assert.LessOrEqual(t, len(p.DaemonSet), MaxDaemonSetNameLength)
		assert.False(t, seen[p.DaemonSet], "duplicate %s", p.DaemonSet)
		seen[p.DaemonSet] = true
	}
}

func TestRouteDedupesDaemonSetNamesAcrossDrivers(t *testing.T) {
	t.Parallel()
	// Contrived but legal: both pools compose "d-b-x1-y1-k".
	p1 := PoolLabels{"b", "x", "1", "y1-k"}
	p2 := PoolLabels{"x1", "y", "1", "k"}
	require.Equal(t, DaemonSetName("d", p1), DaemonSetName("d-b", p2))

	labels := func(p PoolLabels, extra ...string) Node {
		return node("n-"+p.Family, append([]string{
			v1alpha1.LabelFamily, p.Family, v1alpha1.LabelOSID, p.OS, v1alpha1.LabelOSVersion, p.OSVersion, v1alpha1.LabelKernel, p.Kernel,
		}, extra...)...)
	}
	res := Route([]v1alpha1.RBLNDriver{drv("d", sel("pick", "d")), drv("d-b", sel("pick", "db"))},
		[]Node{labels(p1, "pick", "d"), labels(p2, "pick", "db")})
	require.Len(t, res.Pools, 2)
	assert.NotEqual(t, res.Pools[0].DaemonSet, res.Pools[1].DaemonSet)
	for _, p := range res.Pools {
		assert.Regexp(t, hashSuffix, p.DaemonSet)
		assert.LessOrEqual(t, len(p.DaemonSet), MaxDaemonSetNameLength)
	}
}

func TestPoolLabelsOf(t *testing.T) {
	t.Parallel()
	p, err := PoolLabelsOf(baseLabels())
	require.NoError(t, err)
	assert.Equal(t, PoolLabels{"atom", "ubuntu", "22.04", atomKernel}, p)
	assert.Equal(t, map[string]string{
		v1alpha1.LabelFamily: "atom", v1alpha1.LabelOSID: "ubuntu", v1alpha1.LabelOSVersion: "22.04", v1alpha1.LabelKernel: atomKernel,
	}, p.Selector())

	tests := []struct {
		name   string
		labels map[string]string
		reason string
		msg    string
	}{
		{"missing family", node("x", v1alpha1.LabelFamily, "-").Labels, ReasonDriverFamilyLabelMissing, "is missing"},
		{"empty family", node("x", v1alpha1.LabelFamily, "").Labels, ReasonDriverFamilyLabelMissing, "is missing"},
		{"family not a label value", node("x", v1alpha1.LabelFamily, "atom+").Labels, ReasonDriverFamilyLabelMissing, `"atom+" is not a valid family`},
		{"missing kernel", node("x", v1alpha1.LabelKernel, "-").Labels, ReasonInvalidImageTag, v1alpha1.LabelKernel},
		{"missing all NFD labels", node("x", v1alpha1.LabelKernel, "-", v1alpha1.LabelOSID, "-", v1alpha1.LabelOSVersion, "-").Labels, ReasonInvalidImageTag,
			v1alpha1.LabelOSID + ", " + v1alpha1.LabelOSVersion + ", " + v1alpha1.LabelKernel},
		{"nil labels", nil, ReasonDriverFamilyLabelMissing, "is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := PoolLabelsOf(tt.labels)
			var pe *PoolLabelError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.reason, pe.Reason)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

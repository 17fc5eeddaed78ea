package cluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/routing"
)

func driver(name, version string) v1alpha1.RBLNDriver {
	return v1alpha1.RBLNDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RBLNDriverSpec{Version: version}}
}

func policy(name string) v1alpha1.RBLNClusterPolicy {
	return v1alpha1.RBLNClusterPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func names[T any](list []T, name func(T) string) []string {
	out := []string{}
	for _, v := range list {
		out = append(out, name(v))
	}
	return out
}

func nodeNames(s *cluster.State) []string {
	return names(s.Nodes(), func(n routing.Node) string { return n.Name })
}

func driverNames(s *cluster.State) []string {
	return names(s.Drivers(), func(d v1alpha1.RBLNDriver) string { return d.Name + "@" + d.Spec.Version })
}

// TestStateEvents: the state follows Set and Delete events as an informer delivers them, in
// the order objects were first set.
func TestStateEvents(t *testing.T) {
	for name, tc := range map[string]struct {
		events  func(s *cluster.State)
		nodes   []string
		drivers []string
	}{
		"sets append in order": {
			events: func(s *cluster.State) {
				s.SetNode(routing.Node{Name: "b"})
				s.SetNode(routing.Node{Name: "a"})
				s.SetDriver(driver("d1", "1"))
			},
			nodes: []string{"b", "a"}, drivers: []string{"d1@1"},
		},
		"a set replaces in place": {
			events: func(s *cluster.State) {
				s.SetDriver(driver("d1", "1"))
				s.SetDriver(driver("d2", "1"))
				s.SetDriver(driver("d1", "2"))
			},
			nodes: []string{}, drivers: []string{"d1@2", "d2@1"},
		},
		"deletes": {
			events: func(s *cluster.State) {
				s.SetNode(routing.Node{Name: "a"})
				s.SetNode(routing.Node{Name: "b"})
				s.DeleteNode("a")
				s.DeleteNode("missing")
				s.SetDriver(driver("d1", "1"))
				s.DeleteDriver("d1")
			},
			nodes: []string{"b"}, drivers: []string{},
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := &cluster.State{}
			tc.events(s)
			assert.Equal(t, tc.nodes, nodeNames(s))
			assert.Equal(t, tc.drivers, driverNames(s))
		})
	}
}

// TestFromListsKeepsDuplicates: lists read from files are kept as given — routing reports a
// duplicate driver, so the state must not hide it.
func TestFromListsKeepsDuplicates(t *testing.T) {
	s := cluster.FromLists(nil, []v1alpha1.RBLNDriver{driver("d", "1"), driver("d", "2")}, nil, nil)
	assert.Equal(t, []string{"d@1", "d@2"}, driverNames(s))
	s.SetDriver(driver("d", "3"))
	assert.Equal(t, []string{"d@3", "d@2"}, driverNames(s), "Set replaces the first")
	s.DeleteDriver("d")
	assert.Empty(t, s.Drivers(), "Delete removes every object of the name")
	assert.Nil(t, s.Workloads())
}

// TestClusterPolicyThatApplies: the one rbln-npu-operator reads, the oldest that is not
// ignored, whatever its name.
func TestClusterPolicyThatApplies(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	aged := func(name string, age time.Duration, state string) v1alpha1.RBLNClusterPolicy {
		p := policy(name)
		p.CreationTimestamp = metav1.NewTime(t0.Add(-age))
		p.Status.State = state
		return p
	}
	for name, tc := range map[string]struct {
		policies []v1alpha1.RBLNClusterPolicy
		want     string
	}{
		"none":                              {},
		"the oldest, whatever its name":     {policies: []v1alpha1.RBLNClusterPolicy{aged("a", time.Hour, ""), aged(v1alpha1.ClusterPolicyName, time.Minute, ""), aged("b", 2*time.Minute, "")}, want: "a"},
		"the smaller name on a tie":         {policies: []v1alpha1.RBLNClusterPolicy{policy("z"), policy("b"), policy("m")}, want: "b"},
		"ignored ones are skipped":          {policies: []v1alpha1.RBLNClusterPolicy{aged("a", time.Hour, "ignored"), aged("b", time.Minute, "")}, want: "b"},
		"one of another name still applies": {policies: []v1alpha1.RBLNClusterPolicy{policy("other")}, want: "other"},
	} {
		t.Run(name, func(t *testing.T) {
			s := cluster.FromLists(nil, nil, tc.policies, nil)
			got := ""
			if cp := s.ClusterPolicy(); cp != nil {
				got = cp.Name
			}
			assert.Equal(t, tc.want, got)
		})
	}
	s := &cluster.State{}
	s.SetClusterPolicy(aged(v1alpha1.ClusterPolicyName, time.Hour, ""))
	s.SetClusterPolicy(policy("other"))
	s.DeleteClusterPolicy(v1alpha1.ClusterPolicyName)
	assert.Equal(t, "other", s.ClusterPolicy().Name)
}

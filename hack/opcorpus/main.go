// Command opcorpus writes the operator conformance corpus (test/conformance/testdata): many
// clusters of nodes with real kernels (Ubuntu, RHEL and Rocky el8/el9 on x86_64 and aarch64,
// 64k-page kernels, Amazon Linux, cloud kernels), random NPU families and RBLNDrivers, and for
// each the objects rbln-npu-operator makes of them: every node's owner label, pool and
// DaemonSet, and the driver and RSMD DaemonSets themselves.
//
// The expected objects are computed here, from the operator's rules as its code states them
// (docs/operator.md names the files and commits), and deliberately not with this repository's
// package operator or package routing: the corpus is a second, independent reading of the
// operator, so the conformance test (test/conformance) checks driverguard's model against it
// rather than against itself.
//
//	go run ./hack/opcorpus -out test/conformance/testdata -clusters 12 -nodes 50 -seed 42
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// The operator's names, as its consts.go files spell them.
const (
	keyOwner     = "rebellions.ai/npu.driver.owner"
	keyDeploy    = "rebellions.ai/npu.deploy.driver"
	keyFamily    = "rebellions.ai/npu.family"
	keyOSID      = "feature.node.kubernetes.io/system-os_release.ID"
	keyOSVersion = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
	keyKernel    = "feature.node.kubernetes.io/kernel-version.full"
	keyRDS       = "rebellions.ai/rds.present"
	keySMDGate   = "rebellions.ai/npu.deploy.rbln-smd"
	namespace    = "rbln-system"
)

// kernel is an OS release and one of its kernels, as Node Feature Discovery labels them.
type kernel struct{ id, version, kernel string }

// kernels are real kernels of the distributions NPU nodes run. The two builds of
// 5.14.0-427.13.1.el9_4 (x86_64 and aarch64) compose one pool name: the operator's first node
// by name defines the pool.
var kernels = []kernel{
	{"ubuntu", "22.04", "5.15.0-126-generic"},
	{"ubuntu", "22.04", "6.8.0-90-generic"},
	{"ubuntu", "22.04", "6.8.0-1021-aws"},
	{"ubuntu", "22.04", "6.5.0-1025-azure"},
	{"ubuntu", "22.04", "6.8.0-1015-gcp"},
	{"ubuntu", "24.04", "6.8.0-45-generic"},
	{"ubuntu", "24.04", "6.8.0-1016-aws"},
	{"ubuntu", "24.04", "6.11.0-1008-azure"},
	{"rhel", "9.4", "5.14.0-427.13.1.el9_4.x86_64"},
	{"rhel", "9.4", "5.14.0-427.13.1.el9_4.aarch64"},
	{"rhel", "9.4", "5.14.0-427.42.1.el9_4.aarch64"},
	{"rhel", "9.2", "5.14.0-284.11.1.el9_2.x86_64"},
	{"rocky", "9.5", "5.14.0-503.11.1.el9_5.x86_64"},
	{"rocky", "9.5", "5.14.0-503.11.1.el9_5.aarch64_64k"},
	{"rocky", "8.10", "4.18.0-553.el8_10.x86_64"},
	{"amzn", "2", "5.10.219-208.866.amzn2.x86_64"},
	{"amzn", "2023", "6.1.94-99.176.amzn2023.x86_64"},
	{"amzn", "2023", "6.1.94-99.176.amzn2023.aarch64"},
	{"debian", "12", "6.1.0-28-cloud-amd64"},
}

// families are the rebellions.ai/npu.family values of the generated nodes: the operator's own
// (its NodeFeatureRule labels atom and rebel100), other valid ones, values that are not
// DNS-1123 labels, and one long enough to push most pool names past 63 characters.
var (
	validFamilies   = []string{"atom", "atom", "atom", "rebel100", "rebel100", "rebel", "ca22"}
	invalidFamilies = []string{"Atom", "atom_x", "atom.x", "-atom", ""}
	longFamily      = "atom-with-an-unusually-long-family-name"
)

// A driver of a generated cluster: its selector and version; reserved and deleting drivers are
// ones the operator leaves out of routing.
type driverSpec struct {
	name     string
	selector map[string]string
	version  string
	policy   corev1.PullPolicy
	deleting bool
}

type node struct {
	name   string
	labels map[string]string
}

// expected is the operator's outcome for one cluster, written to expected.yaml.
type expected struct {
	RDS      bool              `json:"rds"`
	Excluded []string          `json:"excluded"`
	Nodes    []expectedNode    `json:"nodes"`
	Pools    []expectedPool    `json:"pools"`
	SMD      []expectedSMD     `json:"smd"`
	Operator map[string]string `json:"operator"`
}

type expectedNode struct {
	Name string `json:"name"`
	// Owner is the owner label after the operator's reconcile ("" removes it).
	Owner string `json:"owner"`
	// Pool and DaemonSet run a driver on the node ("" for none).
	Pool      string `json:"pool"`
	DaemonSet string `json:"daemonSet"`
	Image     string `json:"image"`
	// Reason says why a node gets no driver, in driverguard's route words.
	Reason string `json:"reason"`
}

type expectedPool struct {
	Name      string   `json:"name"`
	Owner     string   `json:"owner"`
	DaemonSet string   `json:"daemonSet"`
	Image     string   `json:"image"`
	Nodes     []string `json:"nodes"`
}

type expectedSMD struct {
	Resource  string `json:"resource"`
	DaemonSet string `json:"daemonSet"`
	Image     string `json:"image"`
}

func main() {
	out := flag.String("out", "test/conformance/testdata", "directory to write the clusters to")
	clusters := flag.Int("clusters", 12, "number of clusters")
	nodes := flag.Int("nodes", 50, "nodes per cluster")
	seed := flag.Uint64("seed", 42, "random seed")
	flag.Parse()
	r := rand.New(rand.NewPCG(*seed, *seed+1))
	if err := os.RemoveAll(filepath.Join(*out, "clusters")); err != nil {
		fail(err)
	}
	for c := range *clusters {
		dir := filepath.Join(*out, "clusters", fmt.Sprintf("%02d", c))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fail(err)
		}
		if err := writeCluster(r, dir, c, *nodes); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "opcorpus:", err)
	os.Exit(1)
}

func writeCluster(r *rand.Rand, dir string, c, n int) error {
	rds := c%2 == 1
	drivers := genDrivers(r, c)
	nodes := genNodes(r, c, n, drivers)

	exp, daemonSets := operate(drivers, nodes, rds)
	exp.Operator = map[string]string{
		"internal/driver/owner_resolver.go":                      "f270da1f",
		"internal/driver/components/node_pool.go":                "f270da1f",
		"internal/driver/components/driver_manager_daemonset.go": "856f242a",
		"internal/driver/components/driver_manager_podspec.go":   "856f242a",
		"internal/driver/components/smd.go":                      "f270da1f",
		"api/v1alpha1/rblndriver_types.go":                       "f270da1f",
	}

	header := "# Written by hack/opcorpus (go run ./hack/opcorpus): rbln-npu-operator's view of this cluster.\n"
	if err := writeYAML(filepath.Join(dir, "nodes.yaml"), header, nodeObjects(nodes)); err != nil {
		return err
	}
	if err := writeYAML(filepath.Join(dir, "drivers.yaml"), header, driverObjects(drivers)); err != nil {
		return err
	}
	if err := writeYAML(filepath.Join(dir, "cluster-policy.yaml"), header, []any{clusterPolicy(rds)}); err != nil {
		return err
	}
	if err := writeYAML(filepath.Join(dir, "values.yaml"), header, []any{values(drivers)}); err != nil {
		return err
	}
	if err := writeYAML(filepath.Join(dir, "daemonsets.yaml"), header, daemonSets); err != nil {
		return err
	}
	return writeYAML(filepath.Join(dir, "expected.yaml"), header, []any{exp})
}

func writeYAML(path, header string, docs []any) error {
	var b strings.Builder
	b.WriteString(header)
	for _, d := range docs {
		y, err := yaml.Marshal(d)
		if err != nil {
			return err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// genDrivers makes the cluster's RBLNDrivers: the default one (empty selector, in most
// clusters), one per family, a canary, a zone driver that ties with the family ones on zone-a
// nodes of those families, and now and then one the operator excludes.
func genDrivers(r *rand.Rand, c int) []driverSpec {
	version := func() string { return fmt.Sprintf("3.%d.%d", 1+r.IntN(3), r.IntN(5)) }
	var ds []driverSpec
	if c%5 != 4 {
		ds = append(ds, driverSpec{name: "rbln-driver", selector: map[string]string{}, version: version()})
	}
	ds = append(ds,
		driverSpec{name: "rbln-driver-atom", selector: map[string]string{keyFamily: "atom"}, version: version()},
		driverSpec{name: "rbln-driver-rebel100", selector: map[string]string{keyFamily: "rebel100"}, version: version(), policy: corev1.PullAlways},
		driverSpec{name: "rbln-driver-canary", selector: map[string]string{keyFamily: "atom", "env": "canary"}, version: "latest"},
	)
	if c%3 == 0 {
		ds = append(ds, driverSpec{name: "rbln-driver-zone-a", selector: map[string]string{"topology.kubernetes.io/zone": "zone-a"}, version: version()})
	}
	if c%4 == 1 {
		ds = append(ds, driverSpec{name: "rbln-driver-reserved", selector: map[string]string{keyOwner: "rbln-driver"}, version: version()})
	}
	if c%4 == 2 {
		ds = append(ds, driverSpec{name: "rbln-driver-going", selector: map[string]string{keyFamily: "rebel"}, version: version(), deleting: true})
	}
	return ds
}

// genNodes makes n nodes: most candidates with NFD labels and a valid family, some out of scope,
// some without an NFD label or with an unusable family, some labelled for RDS, some with an
// owner label (current or stale).
func genNodes(r *rand.Rand, c, n int, drivers []driverSpec) []node {
	var out []node
	for i := range n {
		k := kernels[r.IntN(len(kernels))]
		arch := "amd64"
		if strings.Contains(k.kernel, "aarch64") {
			arch = "arm64"
		}
		name := fmt.Sprintf("c%02d-npu-%03d", c, i)
		l := map[string]string{
			"kubernetes.io/hostname":                      name,
			"kubernetes.io/arch":                          arch,
			"kubernetes.io/os":                            "linux",
			"topology.kubernetes.io/zone":                 []string{"zone-a", "zone-b", "zone-c"}[r.IntN(3)],
			"node.kubernetes.io/instance-type":            "rbln-npu-8x",
			"feature.node.kubernetes.io/pci-1eff.present": "true",
			keyDeploy:    "true",
			keyOSID:      k.id,
			keyOSVersion: k.version,
			keyKernel:    k.kernel,
			keyFamily:    validFamilies[r.IntN(len(validFamilies))],
		}
		if r.IntN(5) == 0 {
			l["env"] = "canary"
		}
		switch p := r.IntN(100); {
		case p < 5:
			l[keyDeploy] = "pre-installed"
		case p < 7:
			delete(l, keyDeploy)
		case p < 11:
			delete(l, []string{keyOSID, keyOSVersion, keyKernel}[r.IntN(3)]) // no NFD label
		case p < 15:
			delete(l, keyFamily)
		case p < 19:
			l[keyFamily] = invalidFamilies[r.IntN(len(invalidFamilies))]
		case p < 21:
			l[keyFamily] = longFamily
		}
		if r.IntN(4) == 0 {
			l[keyRDS] = "true"
		}
		switch p := r.IntN(10); {
		case p < 4:
			l[keyOwner] = drivers[r.IntN(len(drivers))].name // current or stale
		case p < 5:
			l[keyOwner] = "rbln-driver-retired"
		}
		out = append(out, node{name: name, labels: l})
	}
	// A pair of nodes with both builds of one RHEL kernel: one pool name, two kernels.
	out = append(out,
		node{name: fmt.Sprintf("c%02d-rhel-arm", c), labels: map[string]string{keyDeploy: "true", keyFamily: "atom", keyOSID: "rhel", keyOSVersion: "9.4", keyKernel: "5.14.0-427.13.1.el9_4.aarch64", "kubernetes.io/arch": "arm64"}},
		node{name: fmt.Sprintf("c%02d-rhel-x86", c), labels: map[string]string{keyDeploy: "true", keyFamily: "atom", keyOSID: "rhel", keyOSVersion: "9.4", keyKernel: "5.14.0-427.13.1.el9_4.x86_64", "kubernetes.io/arch": "amd64"}},
	)
	// A family that fits a pool name of 62 characters but not an RDS pool's 59: the same labels
	// with and without rebellions.ai/rds.present.
	for _, rds := range []string{"false", "true"} {
		out = append(out, node{name: fmt.Sprintf("c%02d-fit-rds-%s", c, rds), labels: map[string]string{
			keyDeploy: "true", keyFamily: fitFamily, keyRDS: rds,
			keyOSID: "ubuntu", keyOSVersion: "22.04", keyKernel: "6.8.0-90-generic"}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// fitFamily makes <family>-ubuntu22.04-6.8.0-90-generic 62 characters long.
var fitFamily = "atom-" + strings.Repeat("x", 28)

// operate is the operator's reconcile of the cluster: owner resolution (owner_resolver.go),
// then per RBLNDriver its pools (node_pool.go), DaemonSets (driver_manager_daemonset.go,
// driver_manager_podspec.go) and RSMD DaemonSet (smd.go).
func operate(drivers []driverSpec, nodes []node, rds bool) (*expected, []any) {
	exp := &expected{RDS: rds, Excluded: []string{}, Nodes: []expectedNode{}, Pools: []expectedPool{}, SMD: []expectedSMD{}}
	var routable []driverSpec
	for _, d := range drivers {
		reserved := false
		for _, k := range []string{keyOwner, keyDeploy} {
			_, has := d.selector[k]
			reserved = reserved || has
		}
		if d.deleting || reserved || len(d.name) > 63 {
			exp.Excluded = append(exp.Excluded, d.name)
			continue
		}
		routable = append(routable, d)
	}
	sort.Strings(exp.Excluded)

	owned := map[string][]node{}
	reasons := map[string]string{}
	owners := map[string]string{}
	for _, n := range nodes { // sorted by name
		if n.labels[keyDeploy] != "true" {
			reasons[n.name] = "OutOfScope"
			continue
		}
		owner, tied := ownerOf(n, routable)
		owners[n.name] = owner
		switch {
		case owner == "" && tied:
			reasons[n.name] = "ConflictingNodeSelector"
		case owner == "":
			reasons[n.name] = "NoMatchingDriver"
		case tied:
			reasons[n.name] = "ConflictingNodeSelector"
		}
		if owner != "" {
			owned[owner] = append(owned[owner], n)
		}
	}

	var daemonSets []any
	nodeOut := map[string]expectedNode{}
	for _, d := range routable {
		type pool struct {
			name, family, os, version, kernel string
			rds                               bool
			nodes                             []string
		}
		pools := map[string]*pool{}
		var order []string
		for _, n := range owned[d.name] {
			l := n.labels
			osID, ok1 := l[keyOSID]
			osVersion, ok2 := l[keyOSVersion]
			kern, ok3 := l[keyKernel]
			if !ok1 || !ok2 || !ok3 {
				setReason(reasons, n.name, "NFDLabelMissing")
				continue
			}
			name := osID + osVersion + "-" + cleanKernel(kern)
			isRDS := rds && l[keyRDS] == "true"
			limit := 63
			if isRDS {
				limit = 59
			}
			family, has := l[keyFamily]
			family = strings.TrimSpace(family)
			if !has || len(validation.IsDNS1123Label(family)) > 0 || len(family)+1+len(name) > limit {
				setReason(reasons, n.name, "DriverFamilyLabelMissing")
				continue
			}
			name = family + "-" + name
			if isRDS {
				name += "-rds"
			}
			p := pools[name]
			if p == nil {
				p = &pool{name: name, family: family, os: osID, version: osVersion, kernel: kern, rds: isRDS}
				pools[name] = p
				order = append(order, name)
			} else if p.family != family || p.os != osID || p.version != osVersion || p.kernel != kern {
				setReason(reasons, n.name, "PoolNameCollision")
				continue
			}
			p.nodes = append(p.nodes, n.name)
		}
		sort.Strings(order)
		for _, pn := range order {
			p := pools[pn]
			image := driverImage(d, p.family, p.os+p.version, p.kernel)
			ds := d.name + "-" + p.name
			exp.Pools = append(exp.Pools, expectedPool{Name: p.name, Owner: d.name, DaemonSet: ds, Image: image, Nodes: p.nodes})
			for _, nn := range p.nodes {
				nodeOut[nn] = expectedNode{Pool: p.name, DaemonSet: ds, Image: image}
			}
			sel := map[string]string{keyDeploy: "true", keyOwner: d.name, keyOSID: p.os, keyOSVersion: p.version, keyKernel: p.kernel, keyFamily: p.family}
			if p.rds {
				sel[keyRDS] = "true"
			}
			daemonSets = append(daemonSets, driverDaemonSet(d, p.name, image, sel, rds && !p.rds, p.rds))
		}
		if len(order) > 0 {
			image := "repo.rebellions.ai/rebellions/rbln-smd:" + d.version
			exp.SMD = append(exp.SMD, expectedSMD{Resource: d.name, DaemonSet: d.name + "-smd", Image: image})
			daemonSets = append(daemonSets, smdDaemonSet(d, image))
		}
	}
	sort.Slice(exp.Pools, func(i, j int) bool {
		if exp.Pools[i].Name != exp.Pools[j].Name {
			return exp.Pools[i].Name < exp.Pools[j].Name
		}
		return exp.Pools[i].Owner < exp.Pools[j].Owner
	})
	sort.Slice(exp.SMD, func(i, j int) bool { return exp.SMD[i].Resource < exp.SMD[j].Resource })
	for _, n := range nodes {
		e := nodeOut[n.name]
		e.Name, e.Owner, e.Reason = n.name, owners[n.name], reasons[n.name]
		exp.Nodes = append(exp.Nodes, e)
	}
	return exp, daemonSets
}

func setReason(reasons map[string]string, node, reason string) {
	if reasons[node] == "" {
		reasons[node] = reason
	}
}

// ownerOf resolves one node by brute force: the matching drivers, those no other matching
// selector strictly contains; one of those owns the node, several tie and the node keeps its
// current owner when that is any matching driver.
func ownerOf(n node, drivers []driverSpec) (owner string, tied bool) {
	var matching []driverSpec
	for _, d := range drivers {
		if contains(n.labels, d.selector) {
			matching = append(matching, d)
		}
	}
	var maximal []driverSpec
	for _, a := range matching {
		subsumed := false
		for _, b := range matching {
			if len(b.selector) > len(a.selector) && contains(b.selector, a.selector) {
				subsumed = true
			}
		}
		if !subsumed {
			maximal = append(maximal, a)
		}
	}
	switch len(maximal) {
	case 0:
		return "", false
	case 1:
		return maximal[0].name, false
	}
	for _, d := range matching {
		if d.name == n.labels[keyOwner] {
			return d.name, true
		}
	}
	return "", true
}

// contains reports whether every pair of sub is in m.
func contains(m, sub map[string]string) bool {
	for k, v := range sub {
		if got, ok := m[k]; !ok || got != v {
			return false
		}
	}
	return true
}

var archPart = regexp.MustCompile(`x86_64(?:_64k)?|aarch64(?:_64k)?`)

// cleanKernel is the kernel as the operator writes it into pool names.
func cleanKernel(k string) string {
	k = archPart.ReplaceAllString(k, "")
	k = strings.ReplaceAll(k, "_", ".")
	k = strings.TrimSuffix(k, ".")
	return strings.ToLower(k)
}

func driverImage(d driverSpec, family, osVersion, kern string) string {
	return "repo.rebellions.ai/rebellions/" + family + "/rbln-driver:" + d.version + "-" + kern + "-" + osVersion
}

func labelsOf(component, cr, pool string) map[string]string {
	l := map[string]string{"app.kubernetes.io/name": "rbln-npu-operator", "app.kubernetes.io/component": component, "rebellions.ai/driver-instance": cr}
	if pool != "" {
		l["rebellions.ai/driver-node-pool"] = pool
	}
	return l
}

func copyMap(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func daemonSet(name string, labels map[string]string, spec corev1.PodSpec) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: copyMap(labels)},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: copyMap(labels)},
			Template:       corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: copyMap(labels)}, Spec: spec},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
		},
	}
}

var managerImage = "docker.io/rebellions/rbln-k8s-driver-manager:v0.2.2"

func driverDaemonSet(d driverSpec, pool, image string, sel map[string]string, keepOffRDS, rdsPool bool) *appsv1.DaemonSet {
	pull := d.policy
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	if d.version == "latest" {
		pull = corev1.PullAlways
	}
	spec := corev1.PodSpec{
		ServiceAccountName: "rbln-driver",
		NodeSelector:       sel,
		PriorityClassName:  "system-node-critical",
		InitContainers:     []corev1.Container{{Name: "k8s-driver-manager", Image: managerImage, ImagePullPolicy: corev1.PullIfNotPresent}},
		Containers:         []corev1.Container{{Name: "rbln-driver-container", Image: image, ImagePullPolicy: pull}},
	}
	if rdsPool {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: "rds-bind-config-select", Image: managerImage, ImagePullPolicy: corev1.PullIfNotPresent})
		spec.Containers[0].Env = []corev1.EnvVar{{Name: "RBLN_RDS_BINDING", Value: "enabled"}}
	}
	if keepOffRDS {
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: keyRDS, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"true"}}},
			}}},
		}}
	}
	return daemonSet(d.name+"-"+pool, labelsOf("rbln-driver", d.name, pool), spec)
}

func smdDaemonSet(d driverSpec, image string) *appsv1.DaemonSet {
	pull := d.policy // the RSMD container takes spec.imagePullPolicy as it is; Always for latest
	if d.version == "latest" {
		pull = corev1.PullAlways
	}
	spec := corev1.PodSpec{
		ServiceAccountName: "rbln-smd",
		HostNetwork:        true,
		NodeSelector:       map[string]string{keyDeploy: "true", keyOwner: d.name, keySMDGate: "true"},
		PriorityClassName:  "system-node-critical",
		InitContainers:     []corev1.Container{{Name: "driver-validation", Image: managerImage, ImagePullPolicy: corev1.PullIfNotPresent}},
		Containers:         []corev1.Container{{Name: "rbln-smd", Image: image, ImagePullPolicy: pull}},
	}
	return daemonSet(d.name+"-smd", labelsOf("rbln-smd", d.name, ""), spec)
}

func nodeObjects(nodes []node) []any {
	out := make([]any, len(nodes))
	for i, n := range nodes {
		out[i] = &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels}}
	}
	return out
}

type driverObject struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       map[string]any `json:"spec"`
}

func driverSpecMap(d driverSpec) map[string]any {
	spec := map[string]any{
		"registry": "repo.rebellions.ai", "image": "rebellions/rbln-driver", "version": d.version,
		"manager":      map[string]any{"registry": "docker.io", "image": "rebellions/rbln-k8s-driver-manager", "version": "v0.2.2", "imagePullPolicy": "IfNotPresent"},
		"smd":          map[string]any{"registry": "repo.rebellions.ai", "image": "rebellions/rbln-smd"},
		"nodeSelector": d.selector,
	}
	if d.policy != "" {
		spec["imagePullPolicy"] = string(d.policy)
	}
	return spec
}

func driverObjects(drivers []driverSpec) []any {
	out := make([]any, len(drivers))
	for i, d := range drivers {
		meta := map[string]any{"name": d.name}
		if d.deleting {
			meta["deletionTimestamp"] = "2026-12-01T00:00:00Z"
			meta["finalizers"] = []string{"rebellions.ai/driver-cleanup"}
		}
		out[i] = driverObject{APIVersion: "rebellions.ai/v1alpha1", Kind: "RBLNDriver", Metadata: meta, Spec: driverSpecMap(d)}
	}
	return out
}

func clusterPolicy(rds bool) any {
	return map[string]any{
		"apiVersion": "rebellions.ai/v1alpha1", "kind": "RBLNClusterPolicy",
		"metadata": map[string]any{"name": "rbln-cluster-policy"},
		"spec": map[string]any{
			"driver": map[string]any{"upgradePolicy": map[string]any{"autoUpgrade": false, "maxParallelUpgrades": 1}},
			"rds":    map[string]any{"enabled": rds},
		},
	}
}

// values are chart values that render the cluster's routable drivers that the chart can
// express (the default one and instances rbln-driver-<key>), for `preview -f`.
func values(drivers []driverSpec) any {
	instances := map[string]any{}
	deployDefault := false
	var defVersion string
	for _, d := range drivers {
		if d.deleting || d.name == "rbln-driver-reserved" {
			continue
		}
		if d.name == "rbln-driver" {
			deployDefault, defVersion = true, d.version
			continue
		}
		inst := map[string]any{"image": map[string]any{"tag": d.version}, "nodeSelector": d.selector}
		if d.policy != "" {
			inst["image"].(map[string]any)["pullPolicy"] = string(d.policy)
		}
		instances[strings.TrimPrefix(d.name, "rbln-driver-")] = inst
	}
	drv := map[string]any{"deployDefault": deployDefault, "instances": instances,
		"manager": map[string]any{"image": map[string]any{"registry": "docker.io", "repository": "rebellions/rbln-k8s-driver-manager", "tag": "v0.2.2"}}}
	if defVersion != "" {
		drv["image"] = map[string]any{"tag": defVersion}
	}
	return map[string]any{"driver": drv}
}

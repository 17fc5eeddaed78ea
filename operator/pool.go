package operator

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxPoolNameLength is the longest pool name the operator composes: the name is the value of
// a DaemonSet label (LabelPool). An RDS pool's name keeps room for RDSPoolSuffix within it.
const MaxPoolNameLength = validation.LabelValueMaxLength

// Pool is a driver pool as the operator composes it from one node's labels: the nodes of one
// RBLNDriver that share family, OS and kernel run one driver DaemonSet.
type Pool struct {
	// Name is <family>-<ID><VERSION_ID>-<kernel'>, with RDSPoolSuffix on an RDS pool.
	Name string
	// Family is the rebellions.ai/npu.family label, trimmed of spaces.
	Family string
	// OSID, OSVersion and Kernel are the NFD labels as the node carries them.
	OSID, OSVersion, Kernel string
	// RDS is set for the pool of RDS nodes when the cluster policy enables RDS.
	RDS bool
}

// OS is <ID><VERSION_ID>, e.g. ubuntu22.04: the OS part of the pool name and of the image tag.
func (p Pool) OS() string { return p.OSID + p.OSVersion }

// NodeSelector is the pod nodeSelector of owner's DaemonSet for the pool: the scope, the owner
// label, the raw NFD labels and the family (and rds.present on an RDS pool).
func (p Pool) NodeSelector(owner string) map[string]string {
	sel := map[string]string{
		LabelDeployDriver: DeployDriverTrue,
		LabelOwner:        owner,
		LabelOSID:         p.OSID,
		LabelOSVersion:    p.OSVersion,
		LabelKernel:       p.Kernel,
		LabelFamily:       p.Family,
	}
	if p.RDS {
		sel[LabelRDSPresent] = DeployDriverTrue
	}
	return sel
}

// PoolProblem is why a node joins no pool.
type PoolProblem int

const (
	// NFDLabelMissing: an NFD label (OS ID, VERSION_ID or kernel-version.full) is absent. The
	// operator skips the node silently but for a log line ("Is NFD installed?").
	NFDLabelMissing PoolProblem = iota + 1
	// FamilyMissing: no rebellions.ai/npu.family label.
	FamilyMissing
	// FamilyInvalid: the family, trimmed, is not a DNS-1123 label.
	FamilyInvalid
	// FamilyTooLong: the family makes the pool name longer than the operator allows.
	FamilyTooLong
)

// PoolError says why a node joins no pool. The family problems are the operator's
// DriverFamilyLabelMissing; a missing NFD label has no condition of its own.
type PoolError struct {
	Problem PoolProblem
	// Label is the missing NFD label (NFDLabelMissing) or LabelFamily.
	Label string
	// Family is the family value, trimmed (FamilyInvalid, FamilyTooLong).
	Family string
	// Name is the pool name the family would compose and Limit the longest allowed
	// (FamilyTooLong).
	Name  string
	Limit int
}

func (e *PoolError) Error() string {
	switch e.Problem {
	case NFDLabelMissing:
		return fmt.Sprintf("no %s label: rbln-npu-operator puts the node in no pool and runs no driver DaemonSet on it (it logs \"Is NFD installed?\"); install Node Feature Discovery, or check that it runs on this node", e.Label)
	case FamilyMissing:
		return fmt.Sprintf("no %s label: rbln-npu-operator maps the node to no pool (DriverFamilyLabelMissing); its NodeFeatureRule sets the label from the NPU's PCI device, so check that Node Feature Discovery and the rule run on this node", LabelFamily)
	case FamilyInvalid:
		return fmt.Sprintf("%s=%q is not a DNS-1123 label (lowercase letters, digits and '-', at most 63): rbln-npu-operator treats the node as unlabelled and maps it to no pool (DriverFamilyLabelMissing); fix the label value", LabelFamily, e.Family)
	case FamilyTooLong:
		return fmt.Sprintf("%s=%q makes the pool name %q, %d characters, longer than the %d rbln-npu-operator allows: it treats the node as unlabelled and maps it to no pool (DriverFamilyLabelMissing); use a shorter family value", LabelFamily, e.Family, e.Name, len(e.Name), e.Limit)
	}
	return "the node joins no pool"
}

// FamilyProblem reports whether the error is one of the operator's DriverFamilyLabelMissing
// cases.
func (e *PoolError) FamilyProblem() bool { return e.Problem != NFDLabelMissing }

// PoolOf composes the pool of a node with these labels, as the operator does (rds: the
// cluster policy enables RDS). It reads the NFD labels first: a node missing one of them has
// no pool whatever its family. A label that is present but empty is accepted, as the operator
// accepts it.
func PoolOf(labels map[string]string, rds bool) (Pool, *PoolError) {
	var p Pool
	var ok bool
	if p.OSID, ok = labels[LabelOSID]; !ok {
		return Pool{}, &PoolError{Problem: NFDLabelMissing, Label: LabelOSID}
	}
	if p.OSVersion, ok = labels[LabelOSVersion]; !ok {
		return Pool{}, &PoolError{Problem: NFDLabelMissing, Label: LabelOSVersion}
	}
	if p.Kernel, ok = labels[LabelKernel]; !ok {
		return Pool{}, &PoolError{Problem: NFDLabelMissing, Label: LabelKernel}
	}
	rest := p.OS() + "-" + SanitizeKernel(p.Kernel)

	p.RDS = rds && labels[LabelRDSPresent] == DeployDriverTrue
	limit := MaxPoolNameLength
	if p.RDS {
		limit -= len(RDSPoolSuffix)
	}
	family, ok := labels[LabelFamily]
	if !ok {
		return Pool{}, &PoolError{Problem: FamilyMissing, Label: LabelFamily}
	}
	p.Family = strings.TrimSpace(family)
	p.Name = p.Family + "-" + rest
	switch {
	case len(validation.IsDNS1123Label(p.Family)) != 0:
		return Pool{}, &PoolError{Problem: FamilyInvalid, Label: LabelFamily, Family: p.Family}
	case len(p.Name) > limit:
		return Pool{}, &PoolError{Problem: FamilyTooLong, Label: LabelFamily, Family: p.Family, Name: p.Name, Limit: limit}
	}
	if p.RDS {
		p.Name += RDSPoolSuffix
	}
	return p, nil
}

// kernelArch matches the architecture parts the operator removes from a kernel.
var kernelArch = regexp.MustCompile(`x86_64(?:_64k)?|aarch64(?:_64k)?`)

// SanitizeKernel is the kernel as it appears in a pool name: the NFD kernel with every
// x86_64 or aarch64 (with an optional _64k) removed, '_' turned into '.', one trailing '.'
// trimmed, lowercased. 5.14.0-427.13.1.el9_4.x86_64 becomes 5.14.0-427.13.1.el9.4.
func SanitizeKernel(kernel string) string {
	s := kernelArch.ReplaceAllString(kernel, "")
	s = strings.ReplaceAll(s, "_", ".")
	s = strings.TrimSuffix(s, ".")
	return strings.ToLower(s)
}

// PoolSet is one RBLNDriver's pools as the operator collects them: it visits the driver's
// nodes in name order, and the first node that composes a pool name defines that pool (its
// labels become the DaemonSet's nodeSelector). A later node that composes the same name from
// other labels (an x86_64 and an aarch64 build of one kernel, say) is not selected by that
// DaemonSet: the operator runs no driver on it.
type PoolSet struct {
	byName map[string]Pool
}

// Add adds the pool of the next node in name order. It returns the pool that the name stands
// for (the first one added) and whether p differs from it: p's node gets no driver pod.
func (s *PoolSet) Add(p Pool) (defined Pool, collides bool) {
	if s.byName == nil {
		s.byName = map[string]Pool{}
	}
	if d, ok := s.byName[p.Name]; ok {
		return d, d != p
	}
	s.byName[p.Name] = p
	return p, false
}

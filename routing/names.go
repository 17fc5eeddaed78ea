package routing

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

const (
	// MaxDaemonSetNameLength is the longest DaemonSet name routing produces.
	MaxDaemonSetNameLength = 63
	// maxPoolNameLength keeps pool names valid DNS-1123 subdomains.
	maxPoolNameLength = 253
	// hashLength is the number of hex digits of a name hash suffix.
	hashLength = 10
)

// PoolLabels are the raw node labels that identify a pool (SPEC §4).
type PoolLabels struct {
	Family    string // rebellions.ai/npu.family
	OS        string // feature.node.kubernetes.io/system-os_release.ID
	OSVersion string // feature.node.kubernetes.io/system-os_release.VERSION_ID
	Kernel    string // feature.node.kubernetes.io/kernel-version.full
}

// PoolLabelError explains why a node or nodeSelector has no pool.
type PoolLabelError struct {
	// Reason is ReasonDriverFamilyLabelMissing or ReasonInvalidImageTag.
	Reason string
	// Labels are the missing or invalid label keys.
	Labels []string
	// Family is the invalid family value, if the family label is present but invalid.
	Family string
}

func (e *PoolLabelError) Error() string {
	if e.Reason == ReasonDriverFamilyLabelMissing {
		if e.Family != "" {
			return fmt.Sprintf("label %s=%q is not a valid family (a non-empty label value); the node joins no pool", v1alpha1.LabelFamily, e.Family)
		}
		return fmt.Sprintf("label %s is missing; the node joins no pool", v1alpha1.LabelFamily)
	}
	return fmt.Sprintf("node-feature label(s) %s missing or empty; the pool and image tag cannot be composed", strings.Join(e.Labels, ", "))
}

// PoolLabelsOf reads the pool labels from node labels (or a DaemonSet nodeSelector). It
// returns a *PoolLabelError when the family is not a valid label value or the OS or kernel
// labels are missing or empty.
func PoolLabelsOf(labels map[string]string) (PoolLabels, error) {
	p, err := poolLabelsOf(labels, validFamily)
	if err != nil {
		return p, err
	}
	return p, nil
}

func poolLabelsOf(labels map[string]string, familyOK func(string) bool) (PoolLabels, *PoolLabelError) {
	p := PoolLabels{
		Family:    labels[v1alpha1.LabelFamily],
		OS:        labels[v1alpha1.LabelOSID],
		OSVersion: labels[v1alpha1.LabelOSVersion],
		Kernel:    labels[v1alpha1.LabelKernel],
	}
	if !familyOK(p.Family) {
		return p, &PoolLabelError{Reason: ReasonDriverFamilyLabelMissing, Labels: []string{v1alpha1.LabelFamily}, Family: p.Family}
	}
	var missing []string
	for _, l := range [...]struct{ key, val string }{
		{v1alpha1.LabelOSID, p.OS}, {v1alpha1.LabelOSVersion, p.OSVersion}, {v1alpha1.LabelKernel, p.Kernel},
	} {
		if l.val == "" {
			missing = append(missing, l.key)
		}
	}
	if missing != nil {
		return p, &PoolLabelError{Reason: ReasonInvalidImageTag, Labels: missing}
	}
	return p, nil
}

// validFamily reports whether v can be a family: a non-empty valid label value.
func validFamily(v string) bool {
	return v != "" && len(utilvalidation.IsValidLabelValue(v)) == 0
}

// Selector returns the pool's labels as a nodeSelector.
func (p PoolLabels) Selector() map[string]string {
	return map[string]string{
		v1alpha1.LabelFamily:    p.Family,
		v1alpha1.LabelOSID:      p.OS,
		v1alpha1.LabelOSVersion: p.OSVersion,
		v1alpha1.LabelKernel:    p.Kernel,
	}
}

// key is an unambiguous encoding of the raw labels, the input of every hash.
func (p PoolLabels) key() string {
	return p.Family + "\x00" + p.OS + "\x00" + p.OSVersion + "\x00" + p.Kernel
}

// raw is the unsanitised pool name.
func (p PoolLabels) raw() string {
	return p.Family + "-" + p.OS + p.OSVersion + "-" + p.Kernel
}

// Name is the pool name, a valid DNS-1123 subdomain. Canonical pools (see the package
// documentation) are named <family>-<os><osVersion>-<kernel>; others get a sanitised name
// with a hash of the raw labels appended, so distinct pools never share a name.
func (p PoolLabels) Name() string {
	raw := p.raw()
	if len(raw) <= maxPoolNameLength && p.canonical() {
		return raw
	}
	return withHash(sanitize(raw), maxPoolNameLength, hashOf(p.key()))
}

// canonical reports whether raw() is already a valid name that parses back into exactly
// these labels: family [a-z0-9]+, os [a-z]+, osVersion [0-9][a-z0-9.]*, and a kernel that
// sanitize leaves unchanged. The first '-' ends the family, the first digit ends the OS, the
// next '-' ends the version.
func (p PoolLabels) canonical() bool {
	if p.Family == "" || !allBytes(p.Family, isLowerAlnum) {
		return false
	}
	if p.OS == "" || !allBytes(p.OS, func(c byte) bool { return c >= 'a' && c <= 'z' }) {
		return false
	}
	if p.OSVersion == "" || !isDigit(p.OSVersion[0]) ||
		!allBytes(p.OSVersion, func(c byte) bool { return isLowerAlnum(c) || c == '.' }) {
		return false
	}
	if p.Kernel == "" {
		return false
	}
	raw := p.raw()
	return sanitize(raw) == raw
}

// DaemonSetName is the driver DaemonSet name of driver cr for pool p: <cr>-<pool> when that
// has at most 63 characters, otherwise a 52-character prefix, '-' and a hash of cr and the
// raw pool labels.
func DaemonSetName(cr string, p PoolLabels) string {
	return daemonSetName(cr, p.Name(), p)
}

func daemonSetName(cr, pool string, p PoolLabels) string {
	name := cr + "-" + pool
	if len(name) <= MaxDaemonSetNameLength {
		return name
	}
	return withHash(name, MaxDaemonSetNameLength, hashOf(cr+"\x00"+p.key()))
}

// forcedDaemonSetName is the hashed form of DaemonSetName, used by Route when two pools of
// one result would otherwise share a name.
func forcedDaemonSetName(cr string, p PoolLabels) string {
	return withHash(cr+"-"+p.Name(), MaxDaemonSetNameLength, hashOf(cr+"\x00"+p.key()))
}

// SMDDaemonSetName is the RSMD DaemonSet name of driver cr: <cr>-smd, hashed like
// DaemonSetName when longer than 63 characters.
func SMDDaemonSetName(cr string) string {
	name := cr + "-smd"
	if len(name) <= MaxDaemonSetNameLength {
		return name
	}
	return withHash(name, MaxDaemonSetNameLength, hashOf(cr+"\x00smd"))
}

// withHash returns s cut so that s + "-" + h fits in limit characters, with trailing
// non-alphanumerics removed, followed by "-" + h.
func withHash(s string, limit int, h string) string {
	if keep := limit - len(h) - 1; len(s) > keep {
		s = s[:keep]
	}
	s = strings.TrimRightFunc(s, func(r rune) bool { return r > 0x7f || !isLowerAlnum(byte(r)) })
	if s == "" {
		return h
	}
	return s + "-" + h
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:hashLength]
}

// sanitize maps s onto a valid DNS-1123 subdomain fragment deterministically: ASCII letters
// are lowercased, every other byte outside [a-z0-9.-] becomes '-', a '.' that does not sit
// between two alphanumerics becomes '-', and non-alphanumerics are trimmed from both ends.
func sanitize(s string) string {
	b := make([]byte, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case isLowerAlnum(c) || c == '.' || c == '-':
		default:
			c = '-'
		}
		b[i] = c
	}
	for i, c := range b {
		if c != '.' {
			continue
		}
		if i == 0 || i == len(b)-1 || !isLowerAlnum(b[i-1]) || !isLowerAlnumOrUpper(s[i+1]) {
			b[i] = '-'
		}
	}
	start, end := 0, len(b)
	for start < end && !isLowerAlnum(b[start]) {
		start++
	}
	for end > start && !isLowerAlnum(b[end-1]) {
		end--
	}
	return string(b[start:end])
}

func isLowerAlnumOrUpper(c byte) bool { return isLowerAlnum(c) || (c >= 'A' && c <= 'Z') }

func isLowerAlnum(c byte) bool { return (c >= 'a' && c <= 'z') || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

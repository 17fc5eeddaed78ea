package routing

import (
	"fmt"
	"strings"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/operator"
)

// maxRepositoryNameLength is the OCI distribution limit on <registry>/<path>.
const maxRepositoryNameLength = 255

// ImageError reports an image the operator composes that no registry can serve: a tag that is
// not a valid OCI tag, an invalid repository path component, an empty registry. The operator
// does not check these; the kubelet's pull fails. The reference is kept for the message; it is
// never returned as a usable image.
type ImageError struct {
	// Image is the reference as the operator composes it.
	Image string
	// Problem says what is wrong with it.
	Problem string
}

func (e *ImageError) Error() string {
	return fmt.Sprintf("rbln-npu-operator would deploy %q, which is not a valid image reference: %s; the kubelet cannot pull it", e.Image, e.Problem)
}

// driverSpec is the part of spec the operator composes driver images from.
func driverSpec(spec *v1alpha1.RBLNDriverSpec) operator.DriverSpec {
	return operator.DriverSpec{Registry: spec.Registry, Image: spec.Image, Version: spec.Version}
}

// DriverImage is the driver image of spec for pool p as rbln-npu-operator composes it
// (operator.DriverImage), checked as a registry reads it. It returns "" and the operator's
// *operator.ImageError when the operator cannot compose one, or an *ImageError when the
// reference it composes is not a valid one.
func DriverImage(spec *v1alpha1.RBLNDriverSpec, p operator.Pool) (string, error) {
	ref, err := operator.DriverImage(driverSpec(spec), p)
	if err != nil {
		return "", err
	}
	if err := checkReference(ref); err != nil {
		return "", err
	}
	return ref.String(), nil
}

// DriverTag is the tag of pool p's driver image of spec; it need not be a valid OCI tag (see
// [DriverImage]).
func DriverTag(spec *v1alpha1.RBLNDriverSpec, p operator.Pool) string {
	return operator.DriverTag(spec.Version, p)
}

// SMDImage is the RSMD image of spec as the operator composes it:
// <smd.registry>/<smd.image>:<spec.version>.
func SMDImage(spec *v1alpha1.RBLNDriverSpec) (string, error) {
	if spec.SMD == nil {
		return "", fmt.Errorf("spec.smd is not set (the operator's own CRD defaults it to docker.io/rebellions/rbln-smd); set spec.smd.registry and spec.smd.image")
	}
	ref, ok := operator.SMDImage(spec.SMD.Registry, spec.SMD.Image, spec.Version)
	if !ok {
		return "", fmt.Errorf("spec.version is empty: rbln-npu-operator leaves the RSMD DaemonSet as it is")
	}
	if err := checkReference(ref); err != nil {
		return "", err
	}
	return ref.String(), nil
}

func checkReference(ref operator.ImageRef) error {
	problem := func(format string, args ...any) error {
		return &ImageError{Image: ref.String(), Problem: fmt.Sprintf(format, args...)}
	}
	if ref.Registry == "" {
		return problem("the registry is empty")
	}
	if !ref.Digest && !validation.IsValidTag(ref.Tag) {
		return problem("tag %q is not a valid OCI tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}); fix the node labels or publish the driver for a supported kernel", ref.Tag)
	}
	for _, c := range strings.Split(ref.Repository, "/") {
		if !validPathComponent(c) {
			return problem("repository path component %q is not valid (lowercase letters and digits, separated by '.', '_', '__' or dashes)", c)
		}
	}
	if n := len(ref.Registry) + 1 + len(ref.Repository); n > maxRepositoryNameLength {
		return problem("repository name is %d characters, more than %d", n, maxRepositoryNameLength)
	}
	return nil
}

// validPathComponent implements the OCI distribution path component grammar
// [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*.
func validPathComponent(s string) bool {
	i, n := 0, len(s)
	for {
		start := i
		for i < n && isLowerAlnum(s[i]) {
			i++
		}
		if i == start {
			return false // empty component, or a separator not followed by an alphanumeric
		}
		if i == n {
			return true
		}
		switch {
		case s[i] == '.':
			i++
		case s[i] == '_':
			i++
			if i < n && s[i] == '_' {
				i++
			}
		case s[i] == '-':
			for i < n && s[i] == '-' {
				i++
			}
		default:
			return false
		}
	}
}

func isLowerAlnum(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') }

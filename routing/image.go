package routing

import (
	"fmt"
	"strings"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
)

// maxRepositoryNameLength is the OCI distribution limit on <registry>/<path>.
const maxRepositoryNameLength = 255

// ImageError reports an image reference that cannot be composed. The attempted reference is
// kept for the message; it is never returned as a usable image.
type ImageError struct {
	// Image is the reference as composed from the raw inputs.
	Image string
	// Problem says what is wrong with it.
	Problem string
}

func (e *ImageError) Error() string {
	return fmt.Sprintf("image %q is not a valid reference: %s", e.Image, e.Problem)
}

// DriverImage composes the driver image of spec for pool p:
// <registry>/<org…>/<family>/<name>:<version>-<kernel>-<os><osVersion>, the family inserted
// before the last segment of spec.image. The labels are used raw; if the result is not a
// valid reference (tag grammar or length, repository path component grammar) it returns
// "" and an *ImageError.
func DriverImage(spec *v1alpha1.RBLNDriverSpec, p PoolLabels) (string, error) {
	repo := p.Family + "/" + spec.Image
	if i := strings.LastIndexByte(spec.Image, '/'); i >= 0 {
		repo = spec.Image[:i+1] + p.Family + spec.Image[i:]
	}
	return composeImage(spec.Registry, repo, DriverTag(spec, p))
}

// DriverTag is the driver image tag of spec for pool p, <version>-<kernel>-<os><osVersion>,
// from the raw labels; it need not be a valid OCI tag (see [DriverImage]).
func DriverTag(spec *v1alpha1.RBLNDriverSpec, p PoolLabels) string {
	return spec.Version + "-" + p.Kernel + "-" + p.OS + p.OSVersion
}

// SMDImage composes the RSMD image of spec: <smd.registry>/<smd.image>:<spec.version>.
func SMDImage(spec *v1alpha1.RBLNDriverSpec) (string, error) {
	if spec.SMD == nil || spec.SMD.Registry == "" || spec.SMD.Image == "" {
		return "", &ImageError{Problem: "spec.smd.registry and spec.smd.image must both be set"}
	}
	return composeImage(spec.SMD.Registry, spec.SMD.Image, spec.Version)
}

func composeImage(registry, repo, tag string) (string, error) {
	ref := registry + "/" + repo + ":" + tag
	if registry == "" {
		return "", &ImageError{Image: ref, Problem: "the registry is empty"}
	}
	if !validation.IsValidTag(tag) {
		return "", &ImageError{Image: ref, Problem: fmt.Sprintf("tag %q is not a valid OCI tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}); fix the node labels or publish the driver for a supported kernel", tag)}
	}
	for _, c := range strings.Split(repo, "/") {
		if !validPathComponent(c) {
			return "", &ImageError{Image: ref, Problem: fmt.Sprintf("repository path component %q is not valid (lowercase letters and digits, separated by '.', '_', '__' or dashes)", c)}
		}
	}
	if n := len(registry) + 1 + len(repo); n > maxRepositoryNameLength {
		return "", &ImageError{Image: ref, Problem: fmt.Sprintf("repository name is %d characters, more than %d", n, maxRepositoryNameLength)}
	}
	return ref, nil
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

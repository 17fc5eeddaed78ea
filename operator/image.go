package operator

import (
	"fmt"
	"strings"
)

// ImageRef is an image the operator composes, kept in its parts so that a caller can check
// each one (the operator itself checks none of them against the OCI grammar).
type ImageRef struct {
	Registry   string
	Repository string
	// Tag is the tag, or the digest when Digest is set (an image by digest: <repo>@<digest>).
	Tag    string
	Digest bool
}

// String is the image reference as the operator writes it into the pod spec.
func (r ImageRef) String() string {
	sep := ":"
	if r.Digest {
		sep = "@"
	}
	return r.Registry + "/" + r.Repository + sep + r.Tag
}

// DriverSpec is the part of an RBLNDriver's spec the driver image is composed from.
type DriverSpec struct {
	Registry, Image, Version string
}

// ImageProblem is why the operator cannot compose a driver image.
type ImageProblem int

const (
	// ImageNoOSOrKernel: the pool's <ID><VERSION_ID> or its kernel is empty.
	ImageNoOSOrKernel ImageProblem = iota + 1
	// ImageNoFamily: the pool has no family.
	ImageNoFamily
	// ImageNoImage and ImageNoVersion: spec.image or spec.version is empty once trimmed.
	ImageNoImage
	ImageNoVersion
	// ImageDigest: spec.image holds @sha256: or spec.version sha256:.
	ImageDigest
)

// ImageError is the operator's refusal to compose a driver image. The operator stops
// reconciling the RBLNDriver at that pool: none of its pools is created or updated until the
// cause is fixed.
type ImageError struct {
	Problem ImageProblem
	// Operator is the operator's own message.
	Operator string
}

func (e *ImageError) Error() string {
	if e.Problem == ImageDigest {
		return fmt.Sprintf("rbln-npu-operator cannot build a driver image from a digest (it reports %q): it composes the tag from spec.version, the kernel and the OS, so spec.image must name a repository and spec.version a version", e.Operator)
	}
	return fmt.Sprintf("rbln-npu-operator cannot compose the driver image (it reports %q)", e.Operator)
}

// DriverImage composes the driver image of spec for pool p as the operator does:
// <registry>/<image with the family before its last segment>:<version>-<kernel>-<ID><VERSION_ID>,
// from the registry trimmed of spaces and one trailing '/', the image trimmed of spaces and one
// leading and one trailing '/', the version trimmed of spaces, and the raw kernel.
// rebellions/rbln-driver becomes rebellions/atom/rbln-driver, rbln-driver atom/rbln-driver.
func DriverImage(spec DriverSpec, p Pool) (ImageRef, error) {
	os := p.OS()
	if os == "" || p.Kernel == "" {
		return ImageRef{}, &ImageError{Problem: ImageNoOSOrKernel, Operator: "osVersion and kernelVersion are required"}
	}
	if p.Family == "" {
		return ImageRef{}, &ImageError{Problem: ImageNoFamily, Operator: "NPU family is required to compose the driver image path"}
	}
	registry := strings.TrimSuffix(strings.TrimSpace(spec.Registry), "/")
	image := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(spec.Image), "/"), "/")
	if image == "" {
		return ImageRef{}, &ImageError{Problem: ImageNoImage, Operator: "driver image is required"}
	}
	version := strings.TrimSpace(spec.Version)
	if version == "" {
		return ImageRef{}, &ImageError{Problem: ImageNoVersion, Operator: "driver version is required"}
	}
	if HasDigest(image, version) {
		return ImageRef{}, &ImageError{Problem: ImageDigest, Operator: "specifying image digest is not supported when precompiled is enabled"}
	}
	repo := p.Family + "/" + image
	if i := strings.LastIndexByte(image, '/'); i >= 0 {
		repo = image[:i+1] + p.Family + image[i:]
	}
	return ImageRef{Registry: registry, Repository: repo, Tag: DriverTag(version, p)}, nil
}

// DriverTag is the tag of pool p's driver image: <version>-<kernel>-<ID><VERSION_ID>, the
// version trimmed of spaces and the kernel raw.
func DriverTag(version string, p Pool) string {
	return strings.TrimSpace(version) + "-" + p.Kernel + "-" + p.OS()
}

// HasDigest reports whether an image and version hold a digest the operator refuses for a
// driver image: @sha256: in the image or sha256: in the version.
func HasDigest(image, version string) bool {
	return strings.Contains(image, "@sha256:") || strings.Contains(version, "sha256:")
}

// Reference composes the image of the manager and RSMD containers as the operator does:
// <registry without spaces and one trailing '/'>/<image without spaces and one leading '/'>,
// tagged tag ("latest" when empty), or by digest when the tag (a leading '@' dropped) holds
// sha256:.
func Reference(registry, image, tag string) ImageRef {
	r := ImageRef{
		Registry:   strings.TrimSuffix(strings.TrimSpace(registry), "/"),
		Repository: strings.TrimPrefix(strings.TrimSpace(image), "/"),
		Tag:        tag,
	}
	if r.Tag == "" {
		r.Tag = "latest"
	}
	if d := strings.TrimPrefix(r.Tag, "@"); strings.Contains(d, "sha256:") {
		r.Tag, r.Digest = d, true
	}
	return r
}

// SMDImage is the RSMD image: <smd.registry>/<smd.image>:<spec.version>, the version trimmed
// of spaces. ok is false when the version is empty: the operator then leaves the RSMD
// DaemonSet as it is.
func SMDImage(registry, image, version string) (ref ImageRef, ok bool) {
	v := strings.TrimSpace(version)
	if v == "" {
		return ImageRef{}, false
	}
	return Reference(registry, image, v), true
}

// Pull policies (the values of corev1.PullPolicy).
const (
	PullAlways       = "Always"
	PullIfNotPresent = "IfNotPresent"
)

// DriverPullPolicy is the driver container's pull policy: spec.imagePullPolicy, IfNotPresent
// when empty, Always when spec.version is exactly "latest".
func DriverPullPolicy(policy, version string) string {
	if version == "latest" {
		return PullAlways
	}
	if policy == "" {
		return PullIfNotPresent
	}
	return policy
}

// ReferencePullPolicy is the pull policy of an image composed by [Reference]: Always for the
// tag latest, the given policy otherwise (empty stays empty: the API server defaults it).
func ReferencePullPolicy(policy string, r ImageRef) string {
	if !r.Digest && r.Tag == "latest" {
		return PullAlways
	}
	return policy
}

package imagebuild

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The subset of SPDX 2.3 (JSON) that a Go binary's module list fills.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string       `json:"name"`
	SPDXID           string       `json:"SPDXID"`
	VersionInfo      string       `json:"versionInfo,omitempty"`
	DownloadLocation string       `json:"downloadLocation"`
	FilesAnalyzed    bool         `json:"filesAnalyzed"`
	ExternalRefs     []spdxExtRef `json:"externalRefs,omitempty"`
}

type spdxExtRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// sbom is an SPDX 2.3 document of the Go modules linked into one platform's binary, read
// from its build information. Everything in it derives from the build, so it is as
// reproducible as the image. Module checksums are left out: go.sum's h1: hashes are hashes of
// file trees, which no SPDX checksum algorithm describes.
func sbom(bi *debug.BuildInfo, p v1.Platform, version, revision, source string, created time.Time) ([]byte, error) {
	return sbomOf("", bi, p, version, revision, source, created)
}

// sbomOf is sbom for a binary shipped as what (image's when empty): the document's name and
// namespace say it, so the SBOMs of one revision's image and plugins differ (SPDX wants each
// document's namespace unique).
func sbomOf(what string, bi *debug.BuildInfo, p v1.Platform, version, revision, source string, created time.Time) ([]byte, error) {
	plat := p.OS + "-" + p.Architecture
	if what != "" {
		plat = what + "-" + plat
	}
	id := revision
	if id == "" {
		id = version
	}
	doc := spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              fmt.Sprintf("driverguard-%s-%s", version, plat),
		DocumentNamespace: fmt.Sprintf("%s/sbom/%s/%s", strings.TrimSuffix(source, "/"), id, plat),
		CreationInfo: spdxCreationInfo{
			Created:  created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: driverguard-hack-image"},
		},
	}
	mainID := "SPDXRef-Package-main"
	doc.Packages = append(doc.Packages, spdxPackage{
		Name:             bi.Main.Path,
		SPDXID:           mainID,
		VersionInfo:      version,
		DownloadLocation: source,
		ExternalRefs:     []spdxExtRef{purl(bi.Main.Path, "v"+strings.TrimPrefix(version, "v"))},
	})
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", mainID})
	add := func(id, name, ver string, ref spdxExtRef) {
		doc.Packages = append(doc.Packages, spdxPackage{
			Name:             name,
			SPDXID:           id,
			VersionInfo:      ver,
			DownloadLocation: "NOASSERTION",
			ExternalRefs:     []spdxExtRef{ref},
		})
		doc.Relationships = append(doc.Relationships, spdxRelationship{mainID, "DEPENDS_ON", id})
	}
	add("SPDXRef-Package-stdlib", "stdlib", bi.GoVersion, purl("stdlib", bi.GoVersion))
	for i, dep := range bi.Deps {
		m := dep
		if m.Replace != nil {
			m = m.Replace
		}
		add(fmt.Sprintf("SPDXRef-Package-%d", i+1), m.Path, m.Version, purl(m.Path, m.Version))
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the SBOM of %s: %w", plat, err)
	}
	return append(out, '\n'), nil
}

// purl is the package URL of a Go module (pkg:golang/<module path>@<version>).
func purl(path, version string) spdxExtRef {
	loc := "pkg:golang/" + path
	if version != "" {
		loc += "@" + version
	}
	return spdxExtRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: loc}
}

// BinarySBOM is the SPDX 2.3 document of the Go binary in data shipped as what ("plugin"), as
// Build writes for each image: the modules its build information lists. source is
// org.opencontainers.image.source (DefaultSource when empty); created dates the document (zero: the commit time the binary
// was stamped with, or the Unix epoch).
func BinarySBOM(what string, data []byte, p v1.Platform, version, source string, created time.Time) ([]byte, error) {
	bi, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("the binary's build information: %w", err)
	}
	if source == "" {
		source = DefaultSource
	}
	st := stamp(bi)
	if created.IsZero() {
		created = time.Unix(0, 0)
		if t, err := time.Parse(time.RFC3339, st.time); err == nil {
			created = t
		}
	}
	return sbomOf(what, bi, p, version, st.revision, source, created)
}

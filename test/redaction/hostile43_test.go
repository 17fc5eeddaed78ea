package redaction

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/registry/registrytest"
	"github.com/driverguard/driverguard/test/controlplane"
)

// run43 runs each command of commands in every output format its --help lists, and returns
// what each printed.
func run43(t *testing.T, f *fixture, commands [][]string) []result {
	t.Helper()
	var runs []result
	for _, args := range commands {
		for _, format := range outputFormats(t, f, args[0]) {
			r := f.run(t, append(slices.Clone(args), "-o", format)...)
			require.NotEqual(t, 2, r.code, "%s -o %s: unusable input?\n%s", strings.Join(args, " "), format, r.stderr)
			require.NotEmpty(t, r.stdout, "%s -o %s printed nothing", strings.Join(args, " "), format)
			runs = append(runs, r)
		}
	}
	return runs
}

// commands43 are the commands that check images, from files and from the API server.
func commands43(f *fixture) [][]string {
	live := []string{"--kubeconfig", suite.kubeconfig, "--check-images", "--pull-secret-namespace", driverNamespace}
	return [][]string{
		{"preview", "-f", f.values, "--nodes", f.nodes, "--check-images"},
		{"plan", "-f", f.values, "--nodes", f.nodes, "--drivers", f.drivers, "--check-images"},
		{"route", "--drivers", f.drivers, "--nodes", f.nodes, "--check-images"},
		{"audit", "--nodes", f.nodes, "--drivers", f.drivers, "--check-images"},
		append([]string{"preview", "-f", f.values}, live...),
		append([]string{"audit"}, live...),
	}
}

// previewImages is what preview -o json says of each image.
type previewImage struct{ Image, Status, Reason, Message, Digest string }

func previewImages(t *testing.T, f *fixture) []previewImage {
	t.Helper()
	r := f.run(t, "preview", "-f", f.values, "--nodes", f.nodes, "--check-images", "-o", "json")
	require.NotEqual(t, 2, r.code, r.stderr)
	var rep struct {
		Nodes struct{ Images []previewImage }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	return rep.Nodes.Images
}

// TestCLIPrintsNoDigestARegistryChose (#43 A1): registries that take the credentials and answer
// every manifest with a Docker-Content-Digest of their choice — the hex of the password, the
// hex of the refresh token they issued, the password's hex in upper case (no OCI digest) — get
// no digest printed by any command that checks images, in any output format, from files or
// from the API server: no output holds any form of a credential or a token, hex in either case
// included. preview's JSON reports the images Found without a digest, and the malformed one
// not verified, said in driverguard's words.
func TestCLIPrintsNoDigestARegistryChose(t *testing.T) {
	controlplane.RequireSetup(t, suite.setupErr)
	f := newFixtureOf(t, registrytest.DigestMisbehaviours, func(registrytest.Misbehaviour) string { return password })
	c, err := suite.plane.Client(nil)
	require.NoError(t, err)
	f.apply(t, c)

	runs := run43(t, f, commands43(f))
	images := previewImages(t, f)
	for _, h := range f.regs {
		seen := false
		for _, img := range images {
			if !strings.HasPrefix(img.Image, h.Host+"/") {
				continue
			}
			seen = true
			assert.Empty(t, img.Digest, "%s: %s", h.How, img.Image)
			if h.How == registrytest.DigestNotOCI {
				assert.Equal(t, "Warning", img.Status, img.Message)
				assert.Equal(t, "other", img.Reason)
				assert.Contains(t, img.Message, "was answered with a Docker-Content-Digest that is not an OCI digest")
			} else {
				assert.Equal(t, "Found", img.Status, "%s: %s", h.How, img.Message)
			}
		}
		assert.True(t, seen, "no image of %s in preview's JSON", h.How)
		assert.NotEmpty(t, h.Seen(), "%s was sent the credentials", h.How)
	}
	never := append(f.forbidden(), "[redacted]")
	for _, r := range runs {
		where := "driverguard " + strings.Join(r.args, " ")
		holdsNone(t, where+" (stdout)", r.stdout, never)
		holdsNone(t, where+" (stderr)", r.stderr, never)
	}
}

// TestCLIRedactionPointsAtNothing (#43 A2): the password is "rebellions", a path segment of
// every image the chart composes, and the registry answers the manifest request with a server
// error (the password in its body). Every command prints the image whole, in its messages too,
// and never "[redacted]", which would mark where the password is; no other form of the
// credentials (base64 of user:password, the Authorization, hex) and nothing the registry wrote
// is printed.
func TestCLIRedactionPointsAtNothing(t *testing.T) {
	controlplane.RequireSetup(t, suite.setupErr)
	const pass = "rebellions"
	f := newFixtureOf(t, []registrytest.Misbehaviour{registrytest.ServerError}, func(registrytest.Misbehaviour) string { return pass })
	c, err := suite.plane.Client(nil)
	require.NoError(t, err)
	f.apply(t, c)

	runs := run43(t, f, commands43(f))
	h := f.regs[0]
	images := previewImages(t, f)
	require.NotEmpty(t, images)
	for _, img := range images {
		require.Contains(t, img.Image, "/"+pass+"/", "the password is a path segment of the image")
		assert.Equal(t, "Warning", img.Status, img.Message)
		assert.Contains(t, img.Message, "check "+img.Image+": the manifest request to "+h.Host+" was answered 501 Not Implemented: the registry failed to answer",
			"the image whole, in driverguard's words")
	}
	assert.NotEmpty(t, h.Seen(), "the registry was sent the credentials")
	never := []string{"[redacted]"}
	for _, s := range f.forbidden() {
		if !slices.ContainsFunc(images, func(img previewImage) bool { return strings.Contains(img.Image, s) }) {
			never = append(never, s) // not the password itself: the user's own image holds it
		}
	}
	require.Contains(t, never, registrytest.BasicAuth(user, pass))
	for _, r := range runs {
		where := "driverguard " + strings.Join(r.args, " ")
		holdsNone(t, where+" (stdout)", r.stdout, never)
		holdsNone(t, where+" (stderr)", r.stderr, never)
	}
}

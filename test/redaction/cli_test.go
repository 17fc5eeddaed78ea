package redaction

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/registry/registrytest"
	"github.com/driverguard/driverguard/test/controlplane"
)

// expected is what the check says of each hostile registry's image once it has met it (the
// second pass: MalformedRealm's realm carries the Authorization of the first): the reason, and
// words that say why.
var expected = map[registrytest.Misbehaviour]struct {
	reason string
	says   string
}{
	registrytest.MalformedRealm:      {"other", "the registry's authentication challenge is malformed: its token realm is not a URL"},
	registrytest.TokenEchoJSON:       {"other", "the token endpoint answered without a token"},
	registrytest.CodeIsPassword:      {"unauthorized", "was answered 401 Unauthorized (UNAUTHORIZED): the token endpoint refused the credentials"},
	registrytest.SplitPassword:       {"unauthorized", "was answered 401 Unauthorized (UNAUTHORIZED, DENIED)"},
	registrytest.Base64Echo:          {"unauthorized", "was answered 401 Unauthorized (UNAUTHORIZED)"},
	registrytest.URLEncodedEcho:      {"unauthorized", "was answered 401 Unauthorized: the token endpoint refused the credentials"},
	registrytest.CredentialRealm:     {"unauthorized", "was answered 401 Unauthorized (DENIED)"},
	registrytest.CredentialRealmHost: {"plain-http", "the token realm the registry's challenge names is on another host and in plain HTTP"},
}

// outputFormats are the formats a command's --help lists for -o.
func outputFormats(t *testing.T, f *fixture, command string) []string {
	t.Helper()
	r := f.run(t, command, "--help")
	require.Equal(t, 0, r.code, r.stderr)
	m := regexp.MustCompile(`output format[^:\n]*: ((?:[a-z]+, )*[a-z]+)`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, "%s --help lists no output format:\n%s", command, r.stdout)
	formats := strings.Split(m[1], ", ")
	require.Contains(t, formats, "json", command)
	return formats
}

// TestCLINeverPrintsCredentials (docs/audit.md "serve --audit", README.md "Private registries"): every command that checks images, in every output
// format its --help lists, run twice against the hostile registries — from files (preview,
// plan, route, audit; the credentials a Docker config's robot:<password> per registry) and
// from the API server (audit, preview and plan --kubeconfig; the drivers' pull Secrets) —
// prints no form of any credential, no Authorization a registry was sent and nothing a
// registry wrote, on standard output or standard error; and preview's JSON still says, for
// every registry, why its image was not verified.
func TestCLINeverPrintsCredentials(t *testing.T) {
	controlplane.RequireSetup(t, suite.setupErr)
	f := newFixture(t)
	c, err := suite.plane.Client(nil)
	require.NoError(t, err)
	f.apply(t, c)

	live := []string{"--kubeconfig", suite.kubeconfig, "--check-images", "--pull-secret-namespace", driverNamespace}
	commands := []struct {
		name string
		args []string
	}{
		{"preview", []string{"preview", "-f", f.values, "--nodes", f.nodes, "--check-images"}},
		{"plan", []string{"plan", "-f", f.values, "--nodes", f.nodes, "--drivers", f.drivers, "--check-images"}},
		{"route", []string{"route", "--drivers", f.drivers, "--nodes", f.nodes, "--check-images"}},
		{"audit", []string{"audit", "--nodes", f.nodes, "--drivers", f.drivers, "--check-images"}},
		{"audit --kubeconfig", append([]string{"audit"}, live...)},
		{"preview --kubeconfig", append([]string{"preview", "-f", f.values}, live...)},
		{"plan --kubeconfig", append([]string{"plan", "-f", f.values}, live...)},
	}
	var runs []result
	for pass := 1; pass <= 2; pass++ {
		for _, cmd := range commands {
			for _, format := range outputFormats(t, f, cmd.args[0]) {
				r := f.run(t, append(slices.Clone(cmd.args), "-o", format)...)
				require.NotEqual(t, 2, r.code, "pass %d: %s -o %s: unusable input?\n%s", pass, cmd.name, format, r.stderr)
				require.NotEmpty(t, r.stdout, "pass %d: %s -o %s printed nothing", pass, cmd.name, format)
				for _, h := range f.regs {
					if format == "json" || format == "yaml" {
						assert.Contains(t, r.stdout, h.Host, "pass %d: %s -o %s reports the image of %s", pass, cmd.name, format, h.How)
					}
				}
				runs = append(runs, r)
			}
		}
		// What the check said of each registry, from preview's JSON: why, in driverguard's words.
		r := f.run(t, "preview", "-f", f.values, "--nodes", f.nodes, "--check-images", "-o", "json")
		runs = append(runs, r)
		var rep struct {
			Nodes struct {
				Images []struct{ Image, Status, Reason, Message string }
			}
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
		for _, h := range f.regs {
			want := expected[h.How]
			seen := false
			for _, img := range rep.Nodes.Images {
				if !strings.HasPrefix(img.Image, h.Host+"/") {
					continue
				}
				seen = true
				assert.Equal(t, "Warning", img.Status, "pass %d: %s: %s", pass, h.How, img.Message)
				assert.Equal(t, want.reason, img.Reason, "pass %d: %s: %s", pass, h.How, img.Message)
				assert.Contains(t, img.Message, want.says, "pass %d: %s says why", pass, h.How)
			}
			assert.True(t, seen, "pass %d: no image of %s in preview's JSON", pass, h.How)
		}
	}
	for _, h := range f.regs {
		if h.How != registrytest.CredentialRealmHost {
			assert.NotEmpty(t, h.Seen(), "%s was sent the credentials it tries to get back", h.How)
		}
	}
	never := f.forbidden()
	for _, r := range runs {
		where := "driverguard " + strings.Join(r.args, " ")
		holdsNone(t, where+" (stdout)", r.stdout, never)
		holdsNone(t, where+" (stderr)", r.stderr, never)
	}
}

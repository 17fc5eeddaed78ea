package redaction

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/registry/registrytest"
	"github.com/driverguard/driverguard/test/controlplane"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// driverNamespace is where the driver DaemonSets run: the pull Secrets are read there.
const driverNamespace = "rbln-system"

// suite is the package's one API server (with the webhook in-process) and the driverguard
// binary the tests run.
var suite struct {
	plane      *controlplane.Plane
	bin        string
	kubeconfig string
	dir        string
	setupErr   error
}

func TestMain(m *testing.M) {
	flag.Parse()
	suite.setupErr = setup()
	code := m.Run()
	if suite.plane != nil {
		if err := suite.plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	if suite.dir != "" {
		_ = os.RemoveAll(suite.dir)
	}
	os.Exit(code)
}

func setup() error {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	if suite.bin, err = controlplane.DriverguardBinary(root, "redaction"); err != nil {
		return err
	}
	if suite.dir, err = os.MkdirTemp("", "driverguard-redaction-"); err != nil {
		return err
	}
	if suite.plane, err = controlplane.Start(controlplane.Options{}); err != nil {
		return err
	}
	suite.kubeconfig = filepath.Join(suite.dir, "kubeconfig")
	if err := controlplane.WriteKubeconfig(suite.plane.Env, envtest.User{Name: "driverguard-redaction", Groups: []string{"system:masters"}}, suite.kubeconfig); err != nil {
		return err
	}
	c, err := suite.plane.Client(nil)
	if err != nil {
		return err
	}
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: driverNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// The credentials the hostile registries want: a password whose base64 with the user holds
// "/" and "+" and needs padding; an upper-case word (what an error code looks like) for the
// registries that echo the password as an error code.
const (
	user      = "robot"
	password  = "s3?cr~et/pa+ss&xy"
	upperPass = "ROBOT_PASSWORD_SECRET"
)

// passwordOf is the password the registry misbehaving as how wants.
func passwordOf(how registrytest.Misbehaviour) string {
	if how == registrytest.CodeIsPassword || how == registrytest.SplitPassword {
		return upperPass
	}
	return password
}

// fixture is one hostile registry per misbehaviour, a driver instance pulling from each (its
// own node, its own pull Secret), and the files the CLI reads: values, nodes, the rendered
// drivers, a Docker config holding robot:<password> for every registry.
type fixture struct {
	regs      []*registrytest.Hostile
	dir       string
	values    string
	nodes     string
	drivers   string
	dockerDir string
	nodeObjs  []*corev1.Node
	secrets   []*corev1.Secret
	// passwordOf is the password each registry wants.
	passwordOf func(registrytest.Misbehaviour) string
}

// newFixture serves the registries of registrytest.Misbehaviours and writes the files.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOf(t, registrytest.Misbehaviours, passwordOf)
}

// newFixtureOf serves a registry per misbehaviour of hows, each wanting user and passwordOf(how),
// and writes the files.
func newFixtureOf(t *testing.T, hows []registrytest.Misbehaviour, passwordOf func(registrytest.Misbehaviour) string) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), passwordOf: passwordOf}
	var values strings.Builder
	auths := map[string]any{}
	for i, how := range hows {
		h := registrytest.NewHostile(t, user, passwordOf(how), how)
		f.regs = append(f.regs, h)
		if i == 0 {
			fmt.Fprintf(&values, "driver:\n  deployDefault: false\n  image: {registry: %q}\n  smd: {image: {registry: %q}}\n  instances:\n", h.Host, h.Host)
		}
		fmt.Fprintf(&values, "    %s:\n      image: {registry: %q}\n      smd: {image: {registry: %q}}\n      imagePullSecrets: [%q]\n      nodeSelector: {redaction.test/registry: %q}\n",
			how, h.Host, h.Host, "cred-"+string(how), string(how))
		f.nodeObjs = append(f.nodeObjs, wt.Node("node-"+string(how), wt.CandidateLabels("redaction.test/registry", string(how))))
		f.secrets = append(f.secrets, registrytest.PullSecret(driverNamespace, "cred-"+string(how), h.Host, user, passwordOf(how), false))
		auths[h.Host] = map[string]string{"auth": registrytest.BasicAuth(user, passwordOf(how))}
	}
	f.values = f.write(t, "values.yaml", []byte(values.String()))
	items := make([]any, len(f.nodeObjs))
	for i, n := range f.nodeObjs {
		items[i] = n
	}
	nodes, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	require.NoError(t, err)
	f.nodes = f.write(t, "nodes.yaml", nodes)
	f.dockerDir = filepath.Join(f.dir, "docker")
	require.NoError(t, os.MkdirAll(f.dockerDir, 0o700))
	cfg, err := yaml.Marshal(map[string]any{"auths": auths})
	require.NoError(t, err)
	cfgJSON, err := yaml.YAMLToJSON(cfg)
	require.NoError(t, err)
	f.write(t, filepath.Join("docker", "config.json"), cfgJSON)
	r := f.run(t, "render", "-f", f.values)
	require.Equal(t, 0, r.code, r.stderr)
	f.drivers = f.write(t, "drivers.yaml", []byte(r.stdout))
	return f
}

func (f *fixture) write(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

// result is what one run of the binary printed.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

// run runs the driverguard binary with the fixture's Docker config (and no Helm registry
// config, no kubeconfig but the one given as a flag).
func (f *fixture) run(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite.bin, args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+f.dockerDir, "HELM_REGISTRY_CONFIG="+filepath.Join(f.dir, "no-helm-registry-config.json"),
		"KUBECONFIG="+filepath.Join(f.dir, "no-kubeconfig"), "HOME="+f.dir, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running driverguard %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// apply creates the fixture's nodes, pull Secrets and rendered drivers in the API server, and
// deletes them when the test ends.
func (f *fixture) apply(t *testing.T, c client.Client) {
	t.Helper()
	var objs []client.Object
	for _, n := range f.nodeObjs {
		objs = append(objs, n.DeepCopy())
	}
	for _, s := range f.secrets {
		objs = append(objs, s.DeepCopy())
	}
	data, err := os.ReadFile(f.drivers)
	require.NoError(t, err)
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	for _, o := range objs {
		require.NoError(t, c.Create(t.Context(), o), "%T %s", o, o.GetName())
	}
	t.Cleanup(func() {
		for _, o := range objs {
			_ = client.IgnoreNotFound(c.Delete(context.Background(), o))
		}
	})
}

// forbidden is everything no output may hold: every form of every registry's credentials,
// every Authorization a registry was sent, what the registries wrote (their marker), and the
// halves of the password a registry split across two errors.
func (f *fixture) forbidden() []string {
	out := []string{registrytest.Marker}
	for _, h := range f.regs {
		out = append(out, h.Forms()...)
		if h.How == registrytest.SplitPassword {
			p := f.passwordOf(h.How)
			out = append(out, p[:len(p)/2], p[len(p)/2:])
			for _, a := range h.Seen() {
				out = append(out, a[:len(a)/2], a[len(a)/2:])
			}
		}
	}
	return out
}

// views are text and what it reads as once the escapes of each output format are undone, one
// after the other: JSON's (\uXXXX, \/, \"), XML's and HTML's entities, percent-escapes (the
// github format's, a URL's), Markdown's backslashes, and YAML's folded lines (joined with a
// space, and with nothing).
func views(text string) []string {
	jsonUnescaped := jsonEscape.ReplaceAllStringFunc(text, func(e string) string {
		if e[1] == 'u' {
			n, err := strconv.ParseUint(e[2:], 16, 32)
			if err != nil {
				return e
			}
			return string(rune(n))
		}
		return e[1:]
	})
	entities := html.UnescapeString(jsonUnescaped)
	percent := percentEscape.ReplaceAllStringFunc(entities, func(e string) string {
		n, _ := strconv.ParseUint(e[1:], 16, 8)
		return string([]byte{byte(n)})
	})
	bare := strings.ReplaceAll(percent, `\`, "")
	return []string{text, jsonUnescaped, entities, percent, bare, folded.ReplaceAllString(bare, " "), folded.ReplaceAllString(bare, "")}
}

var (
	jsonEscape    = regexp.MustCompile(`\\(u[0-9a-fA-F]{4}|[/"\\])`)
	percentEscape = regexp.MustCompile(`%[0-9a-fA-F]{2}`)
	folded        = regexp.MustCompile(`[ \t]*\r?\n[ \t]*`)
)

// holdsNone fails the test when any view of text holds any of never.
func holdsNone(t *testing.T, where, text string, never []string) {
	t.Helper()
	for i, v := range views(text) {
		for _, s := range never {
			if strings.Contains(v, s) {
				assert.Failf(t, "a credential in the output", "%s (view %d) holds %q:\n%s", where, i, s, excerpt(v, s))
			}
		}
	}
}

// excerpt is the text around the first s in v.
func excerpt(v, s string) string {
	i := strings.Index(v, s)
	return v[max(0, i-300):min(len(v), i+len(s)+100)]
}

// TestViewsFindHiddenCredentials: the search undoes what each format does to a string, so
// that a credential escaped by a format cannot slip by it.
func TestViewsFindHiddenCredentials(t *testing.T) {
	for _, hidden := range []string{
		`"message": "s3?cr~et\/pa+ss\u0026xy"`,        // JSON, HTML-escaped
		`<failure message="s3?cr~et/pa+ss&amp;xy"/>`,  // XML
		`::warning title=x::s3%3Fcr~et/pa+ss%26xy`,    // github annotations
		`| s3?cr\~et/pa\+ss\&xy |`,                    // Markdown
		"message: could not verify s3?cr~et/pa+ss&xy", // plain
		"message: s3?cr~et/pa+ss&x\n  y",              // YAML, folded
	} {
		found := false
		for _, v := range views(hidden) {
			found = found || strings.Contains(v, password)
		}
		assert.True(t, found, hidden)
	}
}

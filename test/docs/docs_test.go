package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/test/controlplane"
)

// workdirFixture holds the files the docs assume a user has (nodes.yaml, drivers.yaml,
// policies/, values/prod.yaml, new-values.yaml, ...); symlinks in it name the repository's
// files they are. Every doc's sandbox starts with a copy. values.yaml is not there: the README
// shows it (<!-- file: values.yaml -->), and a file a doc shows is that content.
const workdirFixture = "testdata/workdir"

// notRun are the commands that cannot run in a test, by doc and exact text (without the
// comment), with the reason. An entry that no doc shows any longer fails the test.
var notRun = []struct{ doc, text, reason string }{
	{"README.md", "make test",
		"it is the run this test is part of"},
	{"README.md", "make image",
		"builds the image for linux/amd64 and linux/arm64 from a clean checkout of HEAD: a cold cross-compile of the whole binary per platform (minutes); test/image builds the image the same way and checks it (make image-test: every platform)"},
	{"README.md", "make image-push IMAGE=$REGISTRY/driverguard:0.1.0",
		"pushes to the user's registry with the user's credentials, after make image (see there); test/image pushes the image to an in-process registry"},
	{"docs/development.md", "make plugin SIGN_KEY='driverguard releases' SIGN_KEYRING=secring.gpg [SIGN_PASSPHRASE_FILE=pass.txt]",
		"signs with the release's GnuPG key (and [...] marks an optional argument) and cross-compiles every platform; test/plugin runs hack/plugin.sh with SIGN_KEY and a throwaway key, and installs the signed packages"},
}

// given are what a block assumes of the cluster beyond the example cluster, run in its sandbox
// before it (by the block's doc and the start of its first command).
var given = []struct{ doc, first, script, why string }{
	{"docs/plan.md", "driverguard plan --release driverguard -n npu ",
		"kubectl delete rblndrivers,rblnclusterpolicies --all && helm install driverguard charts/driverguard -n npu --create-namespace -f values.yaml",
		"a deployed release: driverguard in the namespace npu, installed from values.yaml in place of the example drivers"},
	{"docs/policy-authoring.md", "kubectl -n driverguard create configmap platform-policies ",
		"kubectl create namespace driverguard",
		"the namespace the chart is installed in"},
}

// docFiles are every docs/*.md and README.md (last: its plugin tarballs build meanwhile).
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	var out []string
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		require.NoError(t, err)
		out = append(out, filepath.ToSlash(rel))
	}
	return append(out, "README.md")
}

// TestDocs runs every command of the README and docs/*.md exactly as written (see the package
// doc), block by block in each doc's order, each block on the example cluster as it was before
// the block (Helm releases uninstalled, the example drivers and cluster policy restored):
//
//   - a console command exits as its `# exits N` says (0 otherwise) and prints what the block
//     shows under it (stdout and stderr as a terminal shows them; a "..." line is any number
//     of lines, a line ending in " ..." any line that starts so), every line it writes to
//     stderr shown (not in a "..."); a command with nothing under it writes nothing to stderr
//     (a failing kubectl in its <(...) would);
//   - a sh command exits 0, or as its `# exits N` says;
//   - every `driverguard` invocation a block shows, run or listed in notRun, and every one shown
//     inline (`driverguard ...`, `helm driverguard ...`, the README's Commands table), names
//     subcommands and flags driverguard has (its --help);
//   - a block after <!-- file: PATH --> is the repository's PATH byte for byte, or, for a
//     PATH the repository has not, the file the commands see in the sandbox.
func TestDocs(t *testing.T) {
	requireSetup(t)
	root := suite.root
	started := time.Now()

	all := map[string]parsed{}
	docs := docFiles(t, root)
	shown := map[string]shownFile{} // the files the docs show that the repository has not
	for _, doc := range docs {
		p, err := parseDoc(root, doc)
		require.NoError(t, err)
		all[doc] = p
		for _, f := range p.files {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(f.path))); err == nil {
				got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.path)))
				require.NoError(t, err)
				assert.Equal(t, string(got), f.content, "%s:%d shows %s differently from the repository's", f.doc, f.line, f.path)
				continue
			}
			if prev, ok := shown[f.path]; ok && prev.content != f.content {
				t.Errorf("%s:%d and %s:%d show %s differently", prev.doc, prev.line, f.doc, f.line, f.path)
			}
			shown[f.path] = f
		}
	}

	// Every listed command and given block is still shown.
	var cmds []command
	for _, doc := range docs {
		for _, b := range all[doc].blocks {
			cmds = append(cmds, b.cmds...)
		}
	}
	for _, n := range notRun {
		assert.True(t, slices.ContainsFunc(cmds, func(c command) bool { return c.doc == n.doc && c.text == n.text }),
			"notRun lists %q of %s, which no longer shows it: remove the entry", n.text, n.doc)
	}
	for _, g := range given {
		assert.True(t, slices.ContainsFunc(cmds, func(c command) bool { return c.doc == g.doc && strings.HasPrefix(c.text, g.first) }),
			"given names a block of %s starting %q, which no longer shows it: remove the entry", g.doc, g.first)
	}
	require.GreaterOrEqual(t, len(cmds), 40, "the docs' commands: did the parser miss blocks?")

	// The commands the docs show but do not run: inline and in the README's Commands table.
	usages := 0
	for _, doc := range docs {
		us, err := parseUsages(root, doc)
		require.NoError(t, err)
		for _, u := range us {
			checkUsage(t, u)
		}
		usages += len(us)
	}
	require.GreaterOrEqual(t, usages, 30, "the docs' inline commands: did the parser miss them?")

	var ran, listed int
	for _, doc := range docs {
		p := all[doc]
		if len(p.blocks) == 0 {
			continue
		}
		t.Run(doc, func(t *testing.T) {
			sb := newSandbox(t, doc, shown)
			for _, b := range p.blocks {
				t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) {
					ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
					defer cancel()
					require.NoError(t, resetCluster(ctx))
					for _, g := range given {
						if g.doc == b.doc && strings.HasPrefix(b.cmds[0].text, g.first) {
							r := sb.run(ctx, g.script, 3, false)
							require.Equal(t, 0, r.code, "given (%s): %s\n%s", g.why, g.script, r.out)
						}
					}
					for _, c := range b.cmds {
						checkDriverguardArgs(t, c)
						if reason, ok := notRunReason(c); ok {
							t.Logf("not run: %s: %s", c, reason)
							listed++
							continue
						}
						ran++
						unshown := c.console && c.want == nil
						asked := suite.proxy.requests.Load()
						r := sb.run(ctx, c.text, c.helm, c.console)
						if !assert.Equal(t, c.exit, r.code, "%s exited %d, the doc says %d (`# exits N` to say another)\n%s", c, r.code, c.exit, r.out) {
							continue
						}
						if strings.Contains(c.text, "--check-images") {
							assert.Greater(t, suite.proxy.requests.Load(), asked, "%s asked the registry nothing\n%s", c, r.out)
						}
						switch {
						case unshown:
							// Nothing shown is nothing to see: a command of the pipeline that
							// fails (kubectl feeding <(...)) says so on stderr.
							assert.Empty(t, r.stderr, "%s wrote to stderr, and the doc shows no output\n%s", c, r.out)
						case c.console:
							got := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
							// The two streams interleave as the process writes them, and a pipe
							// may deliver one before the other: the doc may show either first.
							lines := func(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }
							shown := matchLines(c.want, got) || matchLines(c.want, lines(r.stdout+r.stderr)) || matchLines(c.want, lines(r.stderr+r.stdout))
							assert.True(t, shown, "%s printed\n%s\nthe doc shows\n%s", c, r.out, strings.Join(c.want, "\n"))
							// What goes to stderr is shown, not hidden in a "...".
							for _, line := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
								assert.True(t, line == "" || slices.ContainsFunc(c.want, func(w string) bool { return w != "..." && matchLine(w, line) }),
									"%s wrote %q to stderr, which the doc does not show", c, line)
							}
						}
					}
				})
			}
		})
	}
	t.Logf("%d commands: %d run, %d listed as not run; %d inline commands' subcommands and flags checked; %s",
		len(cmds), ran, listed, usages, time.Since(started).Round(time.Millisecond))
}

func notRunReason(c command) (string, bool) {
	for _, n := range notRun {
		if n.doc == c.doc && n.text == c.text {
			return n.reason, true
		}
	}
	return "", false
}

// sandbox is where one doc's commands run: its working directory and HOME.
type sandbox struct {
	work, home string
}

// newSandbox makes the working directory of doc's commands: the repository's top-level files
// and folders as symlinks (bin/, dist/ and .git/ left out: what a command builds stays here),
// a copy of the workdir fixture, the files the docs show, and the plugin tarballs.
func newSandbox(t *testing.T, doc string, shown map[string]shownFile) *sandbox {
	t.Helper()
	base := filepath.Join(suite.dir, strings.NewReplacer("/", "-", ".", "-").Replace(doc))
	sb := &sandbox{work: filepath.Join(base, "work"), home: filepath.Join(base, "home")}
	require.NoError(t, os.MkdirAll(sb.work, 0o755))
	require.NoError(t, os.MkdirAll(sb.home, 0o755))
	entries, err := os.ReadDir(suite.root)
	require.NoError(t, err)
	for _, e := range entries {
		switch e.Name() {
		case ".git", "bin", "dist":
			continue
		}
		require.NoError(t, os.Symlink(filepath.Join(suite.root, e.Name()), filepath.Join(sb.work, e.Name())))
	}
	fixture, err := filepath.Abs(workdirFixture)
	require.NoError(t, err)
	require.NoError(t, copyTree(fixture, sb.work))
	for path, f := range shown {
		dst := filepath.Join(sb.work, filepath.FromSlash(path))
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, []byte(f.content), 0o644))
	}
	<-suite.pluginsDone
	if suite.pluginsErr != nil {
		t.Fatalf("the plugin tarballs the README installs: %v", suite.pluginsErr)
	}
	tarballs, err := filepath.Glob(filepath.Join(suite.plugins, "*.tgz"))
	require.NoError(t, err)
	require.NotEmpty(t, tarballs, "hack/plugin.sh wrote no tarball into %s", suite.plugins)
	for _, tb := range tarballs {
		require.NoError(t, os.Link(tb, filepath.Join(sb.work, filepath.Base(tb))))
	}
	return sb
}

// copyTree copies the files under src into dst, following symlinks.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := os.Stat(path) // follows a symlink
		if err != nil {
			return err
		}
		if info.IsDir() {
			if d.Type()&os.ModeSymlink != 0 {
				real, err := filepath.EvalSymlinks(path)
				if err != nil {
					return err
				}
				return copyTree(real, target)
			}
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

type result struct {
	code   int
	out    string // stdout and stderr, interleaved as a terminal shows them
	stderr string // stderr alone, when run with separate
	stdout string // stdout alone, when run with separate
}

// run runs text through bash -c in the sandbox, with helm being Helm 3 or Helm 4. Helm 4 has
// a data directory of its own (HELM_DATA_HOME=~/.local/share/helm4), as the README tells a
// user with both Helms: its plugins would break Helm 3's. With separate, stderr is also kept
// apart (stdout and stderr then go through two pipes, and their interleaving in out is not
// the terminal's).
func (sb *sandbox) run(ctx context.Context, text string, helm int, separate bool) result {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	path := suite.pathHelm3 + string(os.PathListSeparator) + os.Getenv("PATH")
	env := baseEnv(sb.home)
	if helm == 4 {
		path = suite.pathHelm4 + string(os.PathListSeparator) + path
		env = append(env, "HELM_DATA_HOME="+filepath.Join(sb.home, ".local", "share", "helm4"))
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", text)
	cmd.Dir = sb.work
	cmd.Env = append(env, "PATH="+path)
	cmd.WaitDelay = 10 * time.Second
	var (
		out            controlplane.LogBuffer
		stdout, stderr bytes.Buffer
	)
	cmd.Stdout, cmd.Stderr = &out, &out
	if separate {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, &stdout), io.MultiWriter(&out, &stderr)
	}
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return result{code: -1, out: fmt.Sprintf("%s\n(bash -c: %v)", out.String(), err)}
	}
	return result{code: code, out: out.String(), stderr: stderr.String(), stdout: stdout.String()}
}

// --- driverguard's subcommands and flags ---------------------------------------------------

var (
	helpMu    sync.Mutex
	helpCache = map[string]string{}
)

// help is `driverguard PATH... --help`.
func help(t *testing.T, path []string) string {
	t.Helper()
	key := strings.Join(path, " ")
	helpMu.Lock()
	defer helpMu.Unlock()
	if h, ok := helpCache[key]; ok {
		return h
	}
	out, err := exec.Command(suite.bins["driverguard"], append(slices.Clone(path), "--help")...).CombinedOutput()
	require.NoError(t, err, "driverguard %s --help:\n%s", key, out)
	helpCache[key] = string(out)
	return string(out)
}

// subcommands lists the "Available Commands" of a help text.
func subcommands(h string) []string {
	_, list, ok := strings.Cut(h, "Available Commands:\n")
	if !ok {
		return nil
	}
	var out []string
	for _, line := range strings.Split(list, "\n") {
		if !strings.HasPrefix(line, "  ") {
			break
		}
		out = append(out, strings.Fields(line)[0])
	}
	return out
}

// hasFlag: the help text lists flag (--name or -x) among its flags.
func hasFlag(h, flag string) bool {
	var re *regexp.Regexp
	if strings.HasPrefix(flag, "--") {
		re = regexp.MustCompile(`(?m)^\s+(-\w, )?` + regexp.QuoteMeta(flag) + `[\s\[=]`)
	} else {
		re = regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(flag) + `, --`)
	}
	return re.MatchString(h)
}

// checkDriverguardArgs: every driverguard a command runs is given subcommands and flags
// driverguard has.
func checkDriverguardArgs(t *testing.T, c command) {
	t.Helper()
	for _, args := range driverguardInvocations(c.text) {
		checkArgs(t, c.String(), args)
	}
}

// checkUsage: a usage names subcommands and flags driverguard has. Its notation is read as
// such: [optional] and (grouped) words, a\|b alternatives (each a subcommand where one is
// expected), "..." for more.
func checkUsage(t *testing.T, u usage) {
	t.Helper()
	var args []string
	for _, w := range strings.Fields(strings.TrimPrefix(u.text, "driverguard ")) {
		w = strings.Trim(w, "[](),")
		if w != "" && w != `\|` && w != "|" {
			args = append(args, w)
		}
	}
	checkArgs(t, u.String(), args)
}

// checkArgs checks the arguments of one driverguard command line (what names it in messages):
// its leading words name subcommands driverguard has (alternatives a|b each), and every flag is
// one of the subcommand's.
func checkArgs(t *testing.T, what string, args []string) {
	t.Helper()
	path := []string{}
	h := help(t, path)
	name := func() string { return strings.Join(append([]string{"driverguard"}, path...), " ") }
	i := 0
	for ; i < len(args) && !strings.HasPrefix(args[i], "-"); i++ {
		subs := subcommands(h)
		if len(subs) == 0 {
			break // a positional argument
		}
		var alts []string
		for _, a := range strings.FieldsFunc(args[i], func(r rune) bool { return r == '|' || r == '\\' }) {
			if a != "..." {
				alts = append(alts, a)
			}
		}
		for _, a := range alts {
			if !slices.Contains(subs, a) {
				t.Errorf("%s: %s has no subcommand %q (it has %s)", what, name(), a, strings.Join(subs, ", "))
				return
			}
		}
		if len(alts) == 0 {
			return
		}
		path = append(path, alts[0])
		h = help(t, path)
	}
	for _, a := range args[i:] {
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		flag, _, _ := strings.Cut(a, "=")
		if !hasFlag(h, flag) {
			t.Errorf("%s: %s has no flag %s", what, name(), flag)
		}
	}
}

// driverguardInvocations returns the arguments of every simple command of a shell line whose
// command word is driverguard (up to a pipe, a list operator, a redirection or the end of a
// process or command substitution).
func driverguardInvocations(text string) [][]string {
	words := shellWords(strings.ReplaceAll(text, "\\\n", " "))
	var out [][]string
	atStart := true
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "|" || w == "||" || w == "&&" || w == ";" || w == "<(" || w == "$(" || w == "(":
			atStart = true
			continue
		case atStart && w == "driverguard":
			var args []string
			for i++; i < len(words); i++ {
				a := words[i]
				if isOperator(a) {
					i--
					break
				}
				args = append(args, a)
			}
			out = append(out, args)
		}
		atStart = false
	}
	return out
}

func isOperator(w string) bool {
	switch w {
	case "|", "||", "&&", ";", ")", "<(", "$(", "(", ">", ">>", "<", "2>", "2>&1":
		return true
	}
	return false
}

// shellWords splits a shell line into words and operators, quotes removed (enough for the
// docs' commands: no escapes inside quotes, no here-documents).
func shellWords(s string) []string {
	var (
		out    []string
		cur    strings.Builder
		quote  rune
		inWord bool
	)
	flush := func() {
		if inWord {
			out = append(out, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if quote != 0 {
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
			continue
		}
		switch {
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			flush()
		case (r == '<' || r == '$') && i+1 < len(rs) && rs[i+1] == '(':
			flush()
			out = append(out, string(r)+"(")
			i++
		case r == '(' || r == ')' || r == ';':
			flush()
			out = append(out, string(r))
		case r == '|' || r == '&' || r == '>' || r == '<':
			flush()
			op := string(r)
			if i+1 < len(rs) && (rs[i+1] == r || (r == '>' && rs[i+1] == '&')) {
				op += string(rs[i+1])
				i++
			}
			out = append(out, op)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	return out
}

// TestShellWords pins the splitting the subcommand and flag check relies on.
func TestShellWords(t *testing.T) {
	got := driverguardInvocations(`driverguard preview -f values.yaml --nodes <(kubectl get nodes -o yaml) | jq '.x | .y' > out.json && driverguard plan --live=false`)
	assert.Equal(t, [][]string{{"preview", "-f", "values.yaml", "--nodes"}, {"plan", "--live=false"}}, got)
	assert.Empty(t, driverguardInvocations(`helm install driverguard charts/driverguard --post-renderer ~/.local/lib/driverguard/bin/driverguard`))
	text, comment := splitComment(`driverguard check -f values.yaml --set 'a=#b' --fail-on-warn   # exits 1`)
	assert.Equal(t, `driverguard check -f values.yaml --set 'a=#b' --fail-on-warn   `, text)
	assert.Equal(t, "exits 1", comment)
}

// TestParse pins the conventions the docs are written in.
func TestParse(t *testing.T) {
	dir := t.TempDir()
	doc := "<!-- file: values.yaml -->\n```yaml\na: 1\n```\n\n<!-- helm: 4 -->\n```sh\n# a comment\nhelm plugin install x.tgz \\\n  --verify=false   # why\n# Helm 3: from here\nhelm version   # exits 3\n```\n\n" +
		"```console\n$ driverguard version   # says\n                        # more\nv1\n...\n$ driverguard nothing\n```\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d.md"), []byte(doc), 0o644))
	p, err := parseDoc(dir, "d.md")
	require.NoError(t, err)
	require.Equal(t, []shownFile{{doc: "d.md", line: 2, path: "values.yaml", content: "a: 1\n"}}, p.files)
	require.Len(t, p.blocks, 3)
	sh := p.blocks[0].cmds
	require.Len(t, sh, 1)
	assert.Equal(t, command{doc: "d.md", line: 9, text: "helm plugin install x.tgz \\\n  --verify=false", comment: "why", helm: 4}, sh[0])
	sh = p.blocks[1].cmds
	require.Len(t, sh, 1, "a # Helm 3 comment starts a part of its own")
	assert.Equal(t, command{doc: "d.md", line: 12, text: "helm version", comment: "exits 3", exit: 3, helm: 3}, sh[0])
	con := p.blocks[2].cmds
	require.Len(t, con, 2)
	assert.Equal(t, command{doc: "d.md", line: 16, text: "driverguard version", comment: "says more", console: true, want: []string{"v1", "..."}, helm: 3}, con[0])
	assert.Nil(t, con[1].want)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "e.md"), []byte("```\n$ kubectl apply -f x.yaml\n```\n"), 0o644))
	_, err = parseDoc(dir, "e.md")
	require.ErrorContains(t, err, "e.md:2: a `$ ` command in a ``` block")

	readme := "## Commands\n\n| command | what |\n|---|---|\n| `plan [-f v.yaml] (--live \\| --nodes F)`, `policy list` | `-o json` |\n\n" +
		"## Else\n\nRun `helm\ndriverguard check -f values.yaml` or `kubectl get nodes`.\n```sh\ndriverguard route\n```\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644))
	us, err := parseUsages(dir, "README.md")
	require.NoError(t, err)
	assert.Equal(t, []usage{
		{doc: "README.md", line: 5, text: `driverguard plan [-f v.yaml] (--live \| --nodes F)`},
		{doc: "README.md", line: 5, text: "driverguard policy list"},
		{doc: "README.md", line: 9, text: "driverguard check -f values.yaml"},
	}, us)

	assert.True(t, matchLines([]string{"a", "...", "c"}, []string{"a", "b", "b", "c"}))
	assert.False(t, matchLines([]string{"a"}, []string{"a", "b"}))
	assert.True(t, matchLines([]string{`did you mean "image"? ...`}, []string{`did you mean "image"? (known: annotations)`}))
	assert.False(t, matchLines([]string{`did you mean "image"? ...`}, []string{`did you mean "images"?`}))
}

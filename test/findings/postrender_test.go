package findings

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/finding"
)

// TestPostRendererSaysWhatCheckFinds pipes `helm template` of every values file of the corpus
// that renders into `driverguard post-render --live false --policy testdata/policy` and
// compares what it says with `check -o json` of the same values judged on the objects alone
// (no --nodes, no --drivers: what --live false judges against): the same verdict, and for a
// denial (the table on standard error) or a pass (its warning lines) a line per finding of
// each object with the same level, rule (or policy package), field and message. A pass
// writes the manifests through byte for byte.
func TestPostRendererSaysWhatCheckFinds(t *testing.T) {
	requireSetup(t)
	helm := filepath.Join(env.root, "bin", "helm")
	require.FileExists(t, helm, "bin/helm: run bash hack/tools.sh helm")
	home := t.TempDir()
	helmEnv := []string{"HELM_DATA_HOME=" + filepath.Join(home, "data"), "HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"), "KUBECONFIG=" + filepath.Join(home, "no-kubeconfig")}
	chart := filepath.Join(env.root, "charts", "driverguard")
	cases, _ := corpus(t)
	var denied, warned, objects, compared int
	for _, vc := range cases {
		tpl := run(t, helmEnv, nil, helm, "template", releaseName, chart, "-f", vc.file)
		require.Equal(t, 0, tpl.code, "helm template %s: %s", vc.name, tpl.stderr)
		// Under a shell of its own standard error: post-render also writes its warnings to
		// its parent's (Helm discards a post-renderer's), which would be this test's.
		pr := run(t, helmEnv, []byte(tpl.stdout), "sh", "-c", `"$@"; exit $?`, "sh", env.bin, "post-render", "--live", "false", "--policy", env.policy)
		require.Contains(t, []int{0, 1}, pr.code, "post-render %s: %s", vc.name, pr.stderr)
		rep := check(t, vc.file)
		require.Equal(t, rep.Passed, pr.code == 0, "%s: check and post-render disagree on the verdict\n%s", vc.name, pr.stderr)

		var want []string
		for _, r := range rep.Resources {
			title := r.Kind + "/" + r.Name
			objects++
			for _, f := range rep.Findings {
				if f.Object.String() != title || f.Rule == finding.RuleOmittedFindings || f.Rule == finding.RuleRenderWarning {
					continue
				}
				if pr.code == 0 && f.Level == finding.Deny {
					continue
				}
				want = append(want, postRenderLine(f.Level, title, findingLine(f, title)))
			}
		}
		slices.Sort(want)
		got := postRenderLines(pr.stderr, pr.code == 0)
		compared += len(want)
		assert.Equal(t, want, got, "%s: post-render's lines are not check's findings\n%s", vc.name, pr.stderr)
		switch {
		case pr.code != 0:
			denied++
			assert.Empty(t, pr.stdout, "%s: a denial writes no manifests", vc.name)
			assert.Contains(t, pr.stderr, "the rendered objects fail the check", vc.name)
		default:
			assert.Equal(t, tpl.stdout, pr.stdout, "%s: a pass writes the manifests through unchanged", vc.name)
			if len(want) > 0 {
				warned++
			}
		}
	}
	t.Logf("post-render: %d values files, %d objects, %d finding lines compared with check; %d denied, %d passed with warnings",
		len(cases), objects, compared, denied, warned)
	require.Positive(t, denied, "the corpus must have a denied case")
	require.Positive(t, warned, "the corpus must have a case that passes with a warning")
}

// findingLine is a finding as check's table and post-render print it under its object: the
// policy package and the message (without a repeated "<Kind>/<name>: "), or the rule, the
// field and the message.
func findingLine(f finding.Finding, title string) string {
	if pkg := f.Policy(); pkg != "" {
		return pkg + ": " + strings.TrimPrefix(f.Message, title+": ")
	}
	line := f.Message
	if f.Field != "" {
		line = f.Field + ": " + line
	}
	return f.Rule + ": " + line
}

func postRenderLine(l finding.Level, title, line string) string {
	return fmt.Sprintf("%s %s %s", l, title, line)
}

var (
	// objectTitle is an object's line in the table of a denial.
	objectTitle = regexp.MustCompile(`^((?:RBLNDriver|RBLNClusterPolicy)/\S+)(?: \(update\))?$`)
	// tableLine is a finding under it.
	tableLine = regexp.MustCompile(`^  (FAIL|WARN|AUDIT) +(.*)$`)
	// passLine is a warning of a pass: the object, then the finding.
	passLine = regexp.MustCompile(`^  (WARN|AUDIT) +((?:RBLNDriver|RBLNClusterPolicy)/[^:]+): (.*)$`)
)

// postRenderLines are the object findings post-render wrote on standard error, sorted.
func postRenderLines(stderr string, passed bool) []string {
	levels := map[string]finding.Level{"FAIL": finding.Deny, "WARN": finding.Warn, "AUDIT": finding.Audit}
	var out []string
	current := ""
	for _, l := range strings.Split(stderr, "\n") {
		if passed {
			if m := passLine.FindStringSubmatch(l); m != nil {
				out = append(out, postRenderLine(levels[m[1]], m[2], m[3]))
			}
			continue
		}
		if !strings.HasPrefix(l, " ") {
			current = "" // a title, a section, the summary
			if m := objectTitle.FindStringSubmatch(l); m != nil {
				current = m[1]
			}
			continue
		}
		if m := tableLine.FindStringSubmatch(l); m != nil && current != "" {
			out = append(out, postRenderLine(levels[m[1]], current, m[2]))
		}
	}
	slices.Sort(out)
	return out
}

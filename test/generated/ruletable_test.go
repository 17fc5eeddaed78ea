package generated_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ruleTableFix is how to bring docs/rules.md up to date.
const ruleTableFix = "run `go run ./hack/ruletable > docs/rules.md` (or `make generate`) and commit the result"

// TestRuleTableIsCurrent: docs/rules.md is the rule table hack/ruletable generates from the
// rule registry (the built-in rules and the bundled library's rule bodies), byte for byte.
func TestRuleTableIsCurrent(t *testing.T) {
	root := repoRoot(t)
	// Built as make test builds driverguard (cgo off, -trimpath): shared packages compile once.
	cmd := exec.Command("go", "run", "-trimpath", "./hack/ruletable")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s failed: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	got, err := os.ReadFile(filepath.Join(root, "docs", "rules.md"))
	if err != nil {
		t.Fatalf("docs/rules.md: %v; %s", err, ruleTableFix)
	}
	if string(got) != string(want) {
		gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gotLines), len(wantLines)) {
			var g, w string
			if i < len(gotLines) {
				g = gotLines[i]
			}
			if i < len(wantLines) {
				w = wantLines[i]
			}
			if g != w {
				t.Fatalf("docs/rules.md is stale: line %d is\n\t%s\nthe registry gives\n\t%s\n%s", i+1, g, w, ruleTableFix)
			}
		}
	}
}

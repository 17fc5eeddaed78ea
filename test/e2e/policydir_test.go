package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

const teamPolicyDeny = `package driverguard.e2e

deny contains msg if {
	input.object.kind == "RBLNDriver"
	startswith(input.object.metadata.name, "rbln-driver-forbidden")
	msg := sprintf("RBLNDriver/%s: e2e team rule: names starting with rbln-driver-forbidden are reserved; pick another name", [input.object.metadata.name])
}
`

const teamPolicyWarn = `package driverguard.e2e

warn contains msg if {
	input.object.kind == "RBLNDriver"
	startswith(input.object.metadata.name, "rbln-driver-forbidden")
	msg := sprintf("RBLNDriver/%s: e2e team rule (relaxed): consider another name", [input.object.metadata.name])
}
`

// TestPolicyDirectoryReloadThroughAPI: the served webhook watches a policy directory (as a
// mounted ConfigMap). Adding a rule changes the API server's answer without a restart; a file
// that does not compile leaves the previous answers in force and is reported with file and
// line; fixing it and removing it take effect too.
func TestPolicyDirectoryReloadThroughAPI(t *testing.T) {
	c, w := newClient(t)
	file := filepath.Join(suite.policyDir, "team.rego")
	t.Cleanup(func() { _ = os.Remove(file) })
	d := wt.Driver("rbln-driver-forbidden-e2e", wt.Sel("policydir.e2e/case", "1"))
	const denied = "e2e team rule: names starting with rbln-driver-forbidden are reserved"

	if err := dryRun(c, d); err != nil {
		t.Fatalf("allowed before the team policy exists, got %v", err)
	}

	write := func(content string) {
		t.Helper()
		// Write and rename, as a ConfigMap update swaps files atomically.
		tmp := filepath.Join(suite.policyDir, ".team.rego.tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}

	write(teamPolicyDeny)
	eventually(t, 15*time.Second, func() error {
		err := dryRun(c, d)
		if err != nil && strings.Contains(err.Error(), denied) {
			return nil
		}
		return fmt.Errorf("the webhook does not apply the new rule yet (%w)", err)
	})
	mustDeny(t, dryRun(c, d), denied)

	// A broken file: the last good set stays active and the failure names the file and line.
	gen := suite.engine.Status().Generation
	write(teamPolicyDeny + "\ndeny contains msg if {\n")
	eventually(t, 15*time.Second, func() error {
		st := suite.engine.Status()
		if st.Error == nil {
			return errors.New("the broken file is not reported yet")
		}
		for _, p := range st.Error.Problems {
			if strings.HasSuffix(p.File, "team.rego") && p.Line > 0 {
				return nil
			}
		}
		return fmt.Errorf("the failure does not name team.rego with a line: %+v", st.Error.Problems)
	})
	if got := suite.engine.Status().Generation; got != gen {
		t.Errorf("a broken reload replaced the active set: generation %d -> %d", gen, got)
	}
	mustDeny(t, dryRun(c, d), denied)

	// Fixing the file (the rule now only warns) takes effect.
	write(teamPolicyWarn)
	eventually(t, 15*time.Second, func() error {
		w.Take()
		if err := dryRun(c, d); err != nil {
			return fmt.Errorf("still denied: %w", err)
		}
		for _, msg := range w.Take() {
			if strings.Contains(msg, "e2e team rule (relaxed)") {
				return nil
			}
		}
		return errors.New("allowed, but without the relaxed rule's warning")
	})
	if st := suite.engine.Status(); st.Error != nil {
		t.Errorf("the fixed file is still reported: %v", st.Error)
	}

	// Removing the file removes the rule.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, func() error {
		w.Take()
		if err := dryRun(c, d); err != nil {
			return err
		}
		for _, msg := range w.Take() {
			if strings.Contains(msg, "e2e team rule") {
				return errors.New("the removed rule still warns")
			}
		}
		return nil
	})
}

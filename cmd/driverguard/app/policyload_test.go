package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/policy"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// TestPolicyLoadErrorsAreBounded: 500 modules with bad package names, one of them 10 KB, are
// reported by every command that loads policies (text on stderr, whatever -o asks) as the
// first policy.MaxProblems problems, names cut, then the count of the rest.
func TestPolicyLoadErrorsAreBounded(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a", 10<<10)
	for i := range 500 {
		pkg := fmt.Sprintf("team%03d", i)
		if i == 0 {
			pkg = long
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%03d.rego", i)), []byte("package "+pkg+"\n"), 0o600))
	}
	req := writeTemp(t, "req.json", string(wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver", nil), nil)))))
	// MaxProblems lines of a file, a line and column and a message of a few names cut to
	// MaxQuotedName with their length, then the count.
	const maxStderr = 100 + policy.MaxProblems*(len("\n  ")+200+3*(policy.MaxQuotedName+20)+300) + 100
	for _, args := range [][]string{
		{"policy", "test", dir},
		{"policy", "test", dir, "-o", "json"},
		{"policy", "list", "--policy", dir, "-o", "json"},
		{"check", "-f", exampleValues, "--policy", dir},
		{"check", "-f", exampleValues, "--policy", dir, "-o", "json"},
		{"review", "-f", req, "--policy", dir},
	} {
		r := run(t, "", args...)
		assert.Equal(t, ExitUsage, r.code, "%v", args)
		assert.Empty(t, r.stdout, "%v", args)
		assert.Less(t, len(r.stderr), maxStderr, "%v", args)
		assert.True(t, strings.HasPrefix(r.stderr, "Error: loading policies: policy: 500 problems:\n  "+filepath.Join(dir, "m000.rego")+":1:1: package "+strings.Repeat("a", 200)+"... (10240 bytes): "), "%v", args)
		assert.True(t, strings.HasSuffix(r.stderr, "\n  ... and 450 more (500 problems in all)\n"), "%v", args)
		assert.Equal(t, policy.MaxProblems+2, strings.Count(r.stderr, "\n"), "%v", args)
	}
}

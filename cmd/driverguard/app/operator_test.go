package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckSpeaksTheOperatorsWords (docs/operator.md): a reserved owner key is refused saying
// that rbln-npu-operator writes that label; a digest in the image or the version is refused
// saying that the operator cannot build a driver image from one.
func TestCheckSpeaksTheOperatorsWords(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, values string
		says         []string
	}{
		{"owner key in a selector", `driver:
  instances:
    canary:
      nodeSelector:
        rebellions.ai/npu.driver.owner: rbln-driver
`, []string{"driver.instances.canary.nodeSelector", "rebellions.ai/npu.driver.owner is reserved: rbln-npu-operator writes it onto nodes itself"}},
		{"digest image", `driver:
  image:
    repository: rebellions/rbln-driver@sha256:` + strings.Repeat("0", 64) + `
`, []string{"driver.image.repository", "rbln-npu-operator cannot build a driver image from a digest"}},
		{"digest version", `driver:
  instances:
    canary:
      image: {tag: "sha256:` + strings.Repeat("0", 64) + `"}
      nodeSelector: {env: canary}
`, []string{"driver.instances.canary.image.tag", "rbln-npu-operator cannot build a driver image from a digest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			require.NoError(t, os.WriteFile(values, []byte(tc.values), 0o600))
			r := run(t, "", "check", "-f", values)
			assert.Equal(t, ExitInvalid, r.code, r.stdout+r.stderr)
			for _, s := range tc.says {
				assert.Contains(t, r.stdout+r.stderr, s)
			}
		})
	}
}

package imagebuild

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplaceable: WriteLayout replaces only a missing or empty directory or an image layout.
func TestReplaceable(t *testing.T) {
	tests := map[string]struct {
		files   []string
		wantErr bool
	}{
		"missing":   {nil, false},
		"empty":     {[]string{}, false},
		"layout":    {[]string{"oci-layout", "index.json"}, false},
		"no layout": {[]string{"README.md"}, true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "oci")
			if tt.files != nil {
				require.NoError(t, os.Mkdir(dir, 0o755))
			}
			for _, f := range tt.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
			}
			err := replaceable(dir)
			if tt.wantErr {
				assert.ErrorContains(t, err, "not an OCI image layout")
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

package imagebuild

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChartAppVersion reads the version the image is tagged with.
func TestChartAppVersion(t *testing.T) {
	tests := map[string]struct {
		chart   string
		want    string
		wantErr string
	}{
		"quoted":  {"apiVersion: v2\nname: x\nversion: 1.0.0\nappVersion: \"0.1.0\"\n", "0.1.0", ""},
		"missing": {"apiVersion: v2\nname: x\nversion: 1.0.0\n", "", "has no appVersion"},
		"invalid": {"appVersion: [", "", "reading the chart's appVersion"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "Chart.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tt.chart), 0o644))
			got, err := chartAppVersion(path)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := chartAppVersion(filepath.Join(t.TempDir(), "none.yaml"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
}

package render_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/render"
)

// writeFiles writes name → content into a temporary directory and returns name → path.
func writeFiles(t *testing.T, files map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	paths := map[string]string{}
	for name, content := range files {
		paths[name] = filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(paths[name], []byte(content), 0o600))
	}
	return paths
}

// TestLoadMatchesHelm: Load is Helm's MergeValues (which it mirrors to read files bounded and
// stoppably): the same values, or an error both give, for every kind of source and their
// precedence. test/differential compares the rendered objects with the helm binary.
func TestLoadMatchesHelm(t *testing.T) {
	f := writeFiles(t, map[string]string{
		"a.yaml":    "driver:\n  image: {tag: \"1\", pullPolicy: Always}\n  annotations: {a: x, b: y}\n  tolerations: [{key: a}, {key: b}]\n",
		"b.yaml":    "driver:\n  image: {tag: \"2\"}\n  annotations: {b: z}\n  tolerations: [{key: c}]\n",
		"list.yaml": "- a\n- b\n",
		"bad.yaml":  "driver: [unclosed\n",
		"tag.txt":   "3.10\n",
		"empty":     "",
		"null.yaml": "driver: {image: null}\n",
	})
	tests := []struct {
		name string
		opts render.ValuesOptions
	}{
		{"files merge maps, later wins", render.ValuesOptions{ValueFiles: []string{f["a.yaml"], f["b.yaml"]}}},
		{"a null in a later file", render.ValuesOptions{ValueFiles: []string{f["a.yaml"], f["null.yaml"]}}},
		{"an empty file", render.ValuesOptions{ValueFiles: []string{f["empty"]}}},
		{"every source, Helm's order", render.ValuesOptions{
			ValueFiles:   []string{f["a.yaml"]},
			JSONValues:   []string{`driver.image={"tag":3.10,"registry":"r"}`},
			Values:       []string{"driver.image.tag=3", "driver.tolerations[1].key=z,driver.x=true"},
			StringValues: []string{"driver.image.tag=4"},
			FileValues:   []string{"driver.image.repository=" + f["tag.txt"]},
		}},
		{"--set into a file's list", render.ValuesOptions{ValueFiles: []string{f["a.yaml"]}, Values: []string{"driver.tolerations[1].value=v"}}},
		{"--set-file list syntax", render.ValuesOptions{FileValues: []string{"driver.imagePullSecrets={" + f["tag.txt"] + "," + f["tag.txt"] + "}"}}},
		{"a file that is not a map", render.ValuesOptions{ValueFiles: []string{f["list.yaml"]}}},
		{"a file that does not parse", render.ValuesOptions{ValueFiles: []string{f["bad.yaml"]}}},
		{"a missing file", render.ValuesOptions{ValueFiles: []string{f["a.yaml"] + ".nope"}}},
		{"a path that is not a URL", render.ValuesOptions{ValueFiles: []string{"%zz"}}},
		{"a bad --set", render.ValuesOptions{Values: []string{"driver.tolerations[x]=1"}}},
		{"a bad --set-json", render.ValuesOptions{JSONValues: []string{"driver={"}}},
		{"a missing --set-file", render.ValuesOptions{FileValues: []string{"driver.x=" + f["a.yaml"] + ".nope"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			helm := values.Options{ValueFiles: tt.opts.ValueFiles, JSONValues: tt.opts.JSONValues, Values: tt.opts.Values,
				StringValues: tt.opts.StringValues, FileValues: tt.opts.FileValues}
			want, helmErr := helm.MergeValues(getter.Providers{})
			got, _, err := render.Load(context.Background(), tt.opts)
			if helmErr != nil {
				require.Error(t, err, "helm: %v", helmErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// TestLoadIsBounded: every file read — values files, --set-file files, standard input — is
// read within MaxFileBytes; the error names the file and the limit.
func TestLoadIsBounded(t *testing.T) {
	f := writeFiles(t, map[string]string{"big.yaml": "driver: {image: {tag: \"" + strings.Repeat("a", 2000) + "\"}}\n"})
	tests := []struct {
		name  string
		opts  render.ValuesOptions
		input string
	}{
		{"a values file", render.ValuesOptions{ValueFiles: []string{f["big.yaml"]}}, f["big.yaml"]},
		{"a --set-file file", render.ValuesOptions{FileValues: []string{"driver.image.tag=" + f["big.yaml"]}}, f["big.yaml"]},
		{"standard input", render.ValuesOptions{ValueFiles: []string{"-"}, Stdin: strings.NewReader(strings.Repeat("#", 5000))}, decode.StdinName},
		{"standard input for --set-file", render.ValuesOptions{FileValues: []string{"driver.image.tag=-"}, Stdin: strings.NewReader(strings.Repeat("#", 5000))}, decode.StdinName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.MaxFileBytes = 1000
			_, _, err := render.Load(context.Background(), tt.opts)
			var tl *decode.TooLargeError
			require.ErrorAs(t, err, &tl)
			assert.Equal(t, tt.input, tl.Name)
			assert.Contains(t, err.Error(), tt.input+" is larger than the limit of 1000 bytes")
		})
	}

	vals, _, err := render.Load(context.Background(), render.ValuesOptions{ValueFiles: []string{"-"}, Stdin: strings.NewReader("driver: {enabled: false}")})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"driver": map[string]any{"enabled": false}}, vals, "'-' reads the given standard input, not the process's")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = render.Load(ctx, render.ValuesOptions{ValueFiles: []string{f["big.yaml"]}})
	require.ErrorIs(t, err, context.Canceled)
}

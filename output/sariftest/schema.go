// Package sariftest gives tests the OASIS SARIF 2.1.0 JSON schema to validate driverguard's
// SARIF against. The schema comes from the module proxy (gosec's tests validate against the
// same file), never vendored here.
package sariftest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// The module and file that hold the schema.
const (
	schemaModule = "github.com/securego/gosec/v2@v2.29.0"
	schemaFile   = "report/sarif/testdata/sarif-schema-2.1.0.json"
)

// Schema downloads (once per module cache) and compiles the SARIF 2.1.0 schema, formats
// asserted.
func Schema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", schemaModule)
	cmd.Dir = t.TempDir() // outside the module: nothing is added to go.mod
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go mod download %s: %s%s", schemaModule, out, stderr.String())
	var mod struct{ Dir, Error string }
	require.NoError(t, json.Unmarshal(out, &mod))
	require.Empty(t, mod.Error)
	f, err := os.Open(filepath.Join(mod.Dir, schemaFile))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource("sarif-schema-2.1.0.json", doc))
	s, err := c.Compile("sarif-schema-2.1.0.json")
	require.NoError(t, err)
	return s
}

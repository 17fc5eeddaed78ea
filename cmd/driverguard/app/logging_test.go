package app

import (
	"bytes"
	"log"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLibraryLogLinesAreWarnings: what a library writes to the standard log (Helm writes its
// warnings there) reaches a one-shot command's stderr as a "Warning: " line, not raw.
func TestLibraryLogLinesAreWarnings(t *testing.T) {
	var stderr bytes.Buffer
	setLogDestination(newWarningHandler(&stderr))
	t.Cleanup(func() { setLogDestination(newWarningHandler(os.Stderr)) })

	log.Printf("cannot overwrite table with non table for %s (%v)", "driverguard.driver.image", map[string]any{})
	assert.Equal(t, "Warning: cannot overwrite table with non table for driverguard.driver.image (map[])\n", stderr.String())
}

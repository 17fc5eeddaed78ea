package render

import (
	"fmt"
	"strings"

	dgvalidation "github.com/driverguard/driverguard/api/validation"
)

// Bounds of what a message quotes from the user's input (SPEC §7: no 50 MB echo): a value,
// and a values path (which holds map keys as long as the user makes them).
const (
	maxQuoted     = dgvalidation.MaxQuotedValue
	maxQuotedPath = 2 * maxQuoted
)

// cut returns s when it has at most n bytes; otherwise its first n bytes (at a character
// boundary) followed by "... (<length> bytes)".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:n], ""), len(s))
}

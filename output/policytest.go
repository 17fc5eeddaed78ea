package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/driverguard/driverguard/policy"
)

// PolicyTests lists the user's tests (and failing or, verbose, all bundled ones) and a summary.
// A test's package, name and file, its error and each line of its output are escaped
// (Escape): they come from the policies.
func PolicyTests(w io.Writer, results []policy.TestResult, verbose bool) {
	type tally struct{ passed, total int }
	var yours, bundled tally
	for _, r := range results {
		t := &yours
		if r.Bundled {
			t = &bundled
		}
		t.total++
		if r.Outcome == policy.TestPass {
			t.passed++
		}
		if r.Bundled && r.Outcome == policy.TestPass && !verbose {
			continue
		}
		esc := Escape
		fmt.Fprintf(w, "%-5s %s.%s (%s:%d)\n", esc(string(r.Outcome)), esc(r.Package), esc(r.Name), esc(r.File), r.Line)
		if r.Error != "" {
			fmt.Fprintf(w, "      %s\n", esc(r.Error))
		}
		if r.Outcome != policy.TestPass && r.Output != "" {
			for _, line := range strings.Split(strings.TrimRight(r.Output, "\n"), "\n") {
				fmt.Fprintf(w, "      %s\n", esc(line))
			}
		}
	}
	fmt.Fprintf(w, "%d/%d passed; bundled library: %d/%d passed\n", yours.passed, yours.total, bundled.passed, bundled.total)
}

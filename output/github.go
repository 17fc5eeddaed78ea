package output

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/driverguard/driverguard/finding"
)

// writeGitHub writes each finding as a GitHub Actions workflow command (::error, ::warning,
// ::notice), located at its values file line when it has one: the run's annotations.
func writeGitHub(w io.Writer, r *Report) error {
	for _, f := range r.Findings {
		cmd := "notice"
		switch f.Level {
		case finding.Deny:
			cmd = "error"
		case finding.Warn:
			cmd = "warning"
		}
		var props []string
		if l := f.Location; l != nil && l.File != "" && l.File != "<stdin>" && l.Line > 0 {
			props = append(props, "file="+ghProperty(l.File), "line="+strconv.Itoa(l.Line))
			if l.Column > 0 {
				props = append(props, "col="+strconv.Itoa(l.Column))
			}
		}
		props = append(props, "title="+ghProperty(f.Rule))
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", cmd, strings.Join(props, ","), ghData(f.String())); err != nil {
			return err
		}
	}
	return nil
}

// ghData escapes a workflow command's message; ghProperty one of its properties. A line break
// is encoded the command's way (%0A, %0D: a line of the annotation); every other control
// character is shown escaped (Escape), as in a table: the runner's log is a terminal's.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(EscapeKeeping(s, "\r\n"))
}

func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(EscapeKeeping(s, "\r\n"))
}

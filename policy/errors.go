package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/driverguard/driverguard/api/validation"
)

// Problem is one reason a policy set cannot be loaded, located in its file.
type Problem struct {
	// File is the module or data file ("" when the problem is not in a file, e.g. a --disable
	// flag). Bundled modules are named bundled:<file>.rego.
	File string `json:"file,omitempty"`
	// Line and Column are 1-based; 0 when unknown.
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	switch {
	case p.File == "":
		return p.Message
	case p.Line == 0:
		return p.File + ": " + p.Message
	case p.Column == 0:
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	default:
		return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Column, p.Message)
	}
}

// Bounds of a LoadError: whatever the policy directories hold (thousands of modules with
// bad package names, a 10 KB package name), what is said about them stays readable and small
// (a line of `check`, the /policyz answer, a log line). They follow decision.MaxFindings and
// validation.Truncate.
const (
	// MaxProblems is the most problems a LoadError holds; the rest are counted
	// (LoadError.Omitted). It equals decision.MaxFindings.
	MaxProblems = 50
	// MaxQuotedName bounds a package name, data path, setting or file path a problem quotes:
	// longer ones are cut with their full length (validation.Truncate).
	MaxQuotedName = 200
	// MaxProblemBytes bounds one problem's message (the parser's and compiler's messages
	// quote the policy's own names).
	MaxProblemBytes = 2000
)

// quoteName cuts a name a problem quotes to MaxQuotedName bytes.
func quoteName(s string) string { return validation.Truncate(s, MaxQuotedName) }

// LoadError reports why a policy set (the bundled library plus the policy directories) could
// not be loaded: every parse, compile and configuration problem, each with its file and line
// — the first MaxProblems, and how many more there are.
type LoadError struct {
	Problems []Problem `json:"problems"`
	// Omitted counts the problems found beyond Problems.
	Omitted int `json:"omitted,omitempty"`
}

// newLoadError holds the first MaxProblems of problems, each with its file cut to
// MaxQuotedName and its message to MaxProblemBytes, and counts the rest.
func newLoadError(problems ...Problem) *LoadError {
	n := min(len(problems), MaxProblems)
	e := &LoadError{Problems: make([]Problem, n), Omitted: len(problems) - n}
	for i, p := range problems[:n] {
		p.File = quoteName(p.File)
		p.Message = validation.Truncate(p.Message, MaxProblemBytes)
		e.Problems[i] = p
	}
	return e
}

// Total is the number of problems found.
func (e *LoadError) Total() int { return len(e.Problems) + e.Omitted }

func (e *LoadError) Error() string {
	if e.Total() == 1 && len(e.Problems) == 1 {
		return "policy: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "policy: %d problems:", e.Total())
	e.writeProblems(&b)
	return b.String()
}

// writeProblems writes one line per problem, at most MaxProblems, then how many more.
func (e *LoadError) writeProblems(b *strings.Builder) {
	listed := e.Problems[:min(len(e.Problems), MaxProblems)]
	for _, p := range listed {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	if more := e.Total() - len(listed); more > 0 {
		fmt.Fprintf(b, "\n  ... and %d more (%d problems in all)", more, e.Total())
	}
}

// problemAt is a Problem at an AST location (which may be nil).
func problemAt(loc *ast.Location, format string, args ...any) Problem {
	p := Problem{Message: fmt.Sprintf(format, args...)}
	if loc != nil {
		p.File, p.Line, p.Column = loc.File, loc.Row, loc.Col
	}
	return p
}

// problemsOf converts parser and compiler errors into problems; other errors become one
// problem in file.
func problemsOf(err error, file string) []Problem {
	var astErrs ast.Errors
	if errors.As(err, &astErrs) {
		out := make([]Problem, 0, len(astErrs))
		for _, e := range astErrs {
			p := problemAt(e.Location, "%s: %s", e.Code, e.Message)
			if p.File == "" {
				p.File = file
			}
			out = append(out, p)
		}
		return out
	}
	var astErr *ast.Error
	if errors.As(err, &astErr) {
		p := problemAt(astErr.Location, "%s: %s", astErr.Code, astErr.Message)
		if p.File == "" {
			p.File = file
		}
		return []Problem{p}
	}
	return []Problem{{File: file, Message: err.Error()}}
}

package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
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

// LoadError reports why a policy set (the bundled library plus the policy directories) could
// not be loaded: every parse, compile and configuration problem, each with its file and line.
type LoadError struct {
	Problems []Problem `json:"problems"`
}

func (e *LoadError) Error() string {
	if len(e.Problems) == 1 {
		return "policy: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "policy: %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
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

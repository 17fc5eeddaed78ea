package render

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/validation"
)

// InvalidValuesError lists every problem found in the values: the first MaxListedErrors, and
// how many more there are. Nothing is rendered when it is returned.
type InvalidValuesError struct {
	Errs field.ErrorList
	// Omitted counts the problems found beyond Errs.
	Omitted int
}

// maxErrorLine bounds one problem's line in the message (its values are cut already; this
// is the backstop for a message quoting something long).
const maxErrorLine = 2000

func (e *InvalidValuesError) Error() string {
	var b strings.Builder
	b.WriteString("invalid values, nothing rendered:")
	for _, fe := range validation.Quotable(e.Errs) {
		b.WriteString("\n  ")
		b.WriteString(validation.Truncate(fe.Error(), maxErrorLine))
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more (%d problems in all)", e.Omitted, e.Total())
	}
	return b.String()
}

// Total is the number of problems found.
func (e *InvalidValuesError) Total() int { return len(e.Errs) + e.Omitted }

// Unwrap exposes each field error to errors.Is and errors.As.
func (e *InvalidValuesError) Unwrap() []error {
	errs := make([]error, len(e.Errs))
	for i, fe := range e.Errs {
		errs[i] = fe
	}
	return errs
}

// SchemaError is returned when the values pass driverguard's own checks but not the chart's
// values.schema.json. It means the two disagree, which is a driverguard bug worth reporting.
type SchemaError struct {
	Err error
}

func (e *SchemaError) Error() string {
	return "values rejected by the chart's values.schema.json: " + validation.Truncate(e.Err.Error(), maxErrorLine)
}

func (e *SchemaError) Unwrap() error { return e.Err }

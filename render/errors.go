package render

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/validation"
)

// InvalidValuesError lists every problem found in the values. Nothing is rendered when it is
// returned.
type InvalidValuesError struct {
	Errs field.ErrorList
}

func (e *InvalidValuesError) Error() string {
	var b strings.Builder
	b.WriteString("invalid values, nothing rendered:")
	for _, fe := range validation.Quotable(e.Errs) {
		b.WriteString("\n  ")
		b.WriteString(fe.Error())
	}
	return b.String()
}

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
	return "values rejected by the chart's values.schema.json: " + e.Err.Error()
}

func (e *SchemaError) Unwrap() error { return e.Err }

package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// durationRange is what a duration flag takes: a duration from min to max, and 0 only when
// zero says what 0 means. A value outside it means nothing or does harm (a policy deadline of
// 1ns fails every write closed, an audit interval of 1ns writes status on every pass), so it
// is refused when the flag is parsed: exit 2, naming the flag and the range.
type durationRange struct {
	min, max time.Duration
	// zero, when set, is what 0 means (e.g. "stop at once"); 0 is refused otherwise, and min
	// must then be positive.
	zero string
	// low, when set, says what a value below min would do.
	low string
}

// String is the range as the flag's usage shows it: "10ms to 1m", "0 to 1m; 0: stop at once".
func (r durationRange) String() string {
	span := formatDuration(r.min) + " to " + formatDuration(r.max)
	switch {
	case r.zero == "":
		return span
	case r.min == 0:
		return span + "; 0: " + r.zero
	}
	return "0: " + r.zero + ", or " + span
}

// durationValue is a time.Duration flag that takes values of its range only. Its Type is
// "duration", as pflag's own, so Flags().GetDuration and the usage text treat it as one, and
// it is a plain pflag.Value (singleUse wraps it in an onceValue like every other flag).
type durationValue struct {
	p   *time.Duration
	r   durationRange
	def time.Duration
}

func (v *durationValue) String() string {
	if v.p == nil {
		return formatDuration(0)
	}
	return formatDuration(*v.p)
}

func (v *durationValue) Type() string { return "duration" }

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration: " + v.hint())
	}
	switch {
	case d < 0:
		return errors.New("negative: " + v.hint())
	case d == 0 && v.r.zero != "":
	case d == 0:
		return errors.New("0 is not accepted: " + v.hint())
	case d < v.r.min:
		low := ""
		if v.r.low != "" {
			low = " " + v.r.low
		}
		return fmt.Errorf("below %s%s: %s", formatDuration(v.r.min), low, v.hint())
	case d > v.r.max:
		return fmt.Errorf("above %s: %s", formatDuration(v.r.max), v.hint())
	}
	*v.p = d
	return nil
}

// hint says what to give instead.
func (v *durationValue) hint() string {
	if v.r.zero != "" && v.r.min == 0 {
		return fmt.Sprintf("give 0 (%s) or a duration up to %s, e.g. %s", v.r.zero, formatDuration(v.r.max), formatDuration(v.def))
	}
	s := fmt.Sprintf("give a duration from %s to %s, e.g. %s", formatDuration(v.r.min), formatDuration(v.r.max), formatDuration(v.def))
	if v.r.zero != "" {
		s += ", or 0 (" + v.r.zero + ")"
	}
	return s
}

// durationVar defines a duration flag of range r, with value as its default; its usage ends
// with the range, e.g. "deadline of one policy evaluation (10ms to 1m)".
func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, r durationRange, usage string) {
	*p = value
	fs.Var(&durationValue{p: p, r: r, def: value}, name, usage+" ("+r.String()+")")
}

// formatDuration writes d as people do: 1m, 1h30m, 500ms, 0 (time.Duration's String
// without its trailing zero units: 1m0s, 1h0m0s).
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

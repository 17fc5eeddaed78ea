package app

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/webhook"
)

// Flags of the input limits (root flags: every command reads through them).
const (
	flagMaxValuesSize    = "max-values-size"
	flagMaxInventorySize = "max-inventory-size"
)

// reviewLimit is the webhook's limit on an AdmissionReview: review reads no more, as the
// webhook would not.
const reviewLimit int64 = webhook.MaxReviewBytes

// inputLimits bound what the commands read.
type inputLimits struct {
	values    sizeValue // values files, --set-file files, policy files
	inventory sizeValue // --nodes, --drivers, --cluster-policy, --pods
}

func newInputLimits() *inputLimits {
	return &inputLimits{values: sizeValue(decode.DefaultMaxValuesBytes), inventory: sizeValue(decode.DefaultMaxInventoryBytes)}
}

func (l *inputLimits) addFlags(fs *pflag.FlagSet) {
	fs.Var(&l.values, flagMaxValuesSize, "the largest values file, --set-file file or policy file read, in bytes or as a quantity (16Mi, 1Gi)")
	fs.Var(&l.inventory, flagMaxInventorySize, "the largest --nodes, --drivers, --cluster-policy or --pods file read, in bytes or as a quantity (512Mi, 2Gi)")
}

// limitsOf are the limits of s, the defaults when Run did not set them.
func limitsOf(s Streams) *inputLimits {
	if s.limits == nil {
		return newInputLimits()
	}
	return s.limits
}

// sizeValue is a byte count flag: a Kubernetes quantity or a plain number of bytes.
type sizeValue int64

func (v *sizeValue) String() string { return decode.FormatBytes(int64(*v)) }
func (v *sizeValue) Type() string   { return "size" }

func (v *sizeValue) Set(s string) error {
	n, err := decode.ParseBytes(s)
	if err != nil {
		return err
	}
	*v = sizeValue(n)
	return nil
}

// withLimitHint adds to an input larger than its limit the flag that raises the limit.
func withLimitHint(err error, flag string) error {
	var tl *decode.TooLargeError
	if errors.As(err, &tl) {
		return fmt.Errorf("%w; raise the limit with --%s", err, flag)
	}
	return err
}

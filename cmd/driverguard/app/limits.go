package app

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/api/decode"
)

// newConfiguration is what the jobs share, with the default input limits.
func newConfiguration(stdin io.Reader) *action.Configuration {
	return &action.Configuration{Stdin: stdin, MaxValuesBytes: decode.DefaultMaxValuesBytes, MaxInventoryBytes: decode.DefaultMaxInventoryBytes}
}

// addLimitFlags adds the input limits (root flags: every command reads through them).
func addLimitFlags(fs *pflag.FlagSet, cfg *action.Configuration) {
	fs.Var((*sizeValue)(&cfg.MaxValuesBytes), action.FlagMaxValuesSize, "the largest values file, --set-file file or policy file read, in bytes or as a quantity (16Mi, 1Gi)")
	fs.Var((*sizeValue)(&cfg.MaxInventoryBytes), action.FlagMaxInventorySize, "the largest --nodes, --drivers, --cluster-policy or --pods file read, in bytes or as a quantity (512Mi, 2Gi)")
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

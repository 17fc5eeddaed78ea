package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/driverguard/driverguard/policy"
)

// policyFlags select and configure the policies of check and review.
type policyFlags struct {
	dirs    []string
	disable []string
	timeout time.Duration
}

// addFlags registers --<dirFlag> (repeatable), --disable and --policy-timeout.
func (f *policyFlags) addFlags(fs *pflag.FlagSet, dirFlag string) {
	fs.StringArrayVar(&f.dirs, dirFlag, nil, "directory of Rego policies (packages under driverguard.) and data documents, evaluated with the bundled library (can repeat)")
	fs.StringArrayVar(&f.disable, "disable", nil, "turn off a policy by name, e.g. lib.max_parallel_upgrades (can repeat; 'driverguard policy list' shows the names)")
	fs.DurationVar(&f.timeout, "policy-timeout", policy.DefaultTimeout, "deadline of one policy evaluation (every policy on one object)")
}

// engine loads the policies once, each file within --max-values-size; a broken policy
// directory is unusable input (exit 2).
func (f *policyFlags) engine(ctx context.Context, s Streams) (*policy.Engine, error) {
	return f.newEngine(ctx, policy.Options{
		Metrics:      prometheus.NewRegistry(), // nothing serves metrics in a one-shot command
		MaxFileBytes: int64(limitsOf(s).values),
	})
}

// newEngine loads the policies with the flags applied to opts.
func (f *policyFlags) newEngine(ctx context.Context, opts policy.Options) (*policy.Engine, error) {
	opts.Dirs, opts.Disable, opts.Timeout = f.dirs, f.disable, f.timeout
	e, err := policy.New(ctx, opts)
	if err != nil {
		return nil, loadError(err)
	}
	return e, nil
}

// loadError reports policies that do not load — the same words for every command that loads
// them (check, review, serve, policy test/list/input/data): unusable input, exit 2.
func loadError(err error) error {
	var le *policy.LoadError
	if errors.As(err, &le) {
		return usageError(fmt.Errorf("loading policies: %w", err))
	}
	return err
}

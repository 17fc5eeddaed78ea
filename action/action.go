package action

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/render"
)

// Configuration is what every action shares.
type Configuration struct {
	// Stdin is what an input named "-" reads.
	Stdin io.Reader
	// MaxValuesBytes bounds a values file, a --set-file file and a policy file;
	// MaxInventoryBytes a node, driver, cluster-policy or workload file (0: decode's defaults).
	MaxValuesBytes    int64
	MaxInventoryBytes int64
}

// The flags that raise the input limits, named by the errors of an input over its limit.
const (
	FlagMaxValuesSize    = "max-values-size"
	FlagMaxInventorySize = "max-inventory-size"
	FlagMaxManifestsSize = "max-manifests-size"
)

func (c *Configuration) maxValuesBytes() int64 {
	if c.MaxValuesBytes > 0 {
		return c.MaxValuesBytes
	}
	return decode.DefaultMaxValuesBytes
}

// readOptions are how the cluster files are read.
func (c *Configuration) readOptions() cluster.ReadOptions {
	return cluster.ReadOptions{Stdin: c.Stdin, MaxBytes: c.MaxInventoryBytes, LimitFlag: FlagMaxInventorySize}
}

// InvalidError is input that was judged and rejected — values that do not render — rather
// than input that could not be used: the CLI exits 1 for it, 2 for any other error.
type InvalidError struct {
	Err error
	// sources locate the values that were rejected.
	sources *render.Sources
}

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// InvalidValue is one problem of values that do not render, with where the user wrote it.
type InvalidValue struct {
	// Path is the values path concerned; Message what is wrong with it and how to fix it.
	Path, Message string
	Location      ValuesLocation
}

// Problems are the problems of values that do not render, each located at the values key
// concerned (else its nearest written ancestor); one problem without a path for any other
// rejection. Omitted counts those the error does not list.
func (e *InvalidError) Problems() (problems []InvalidValue, omitted int) {
	var iv *render.InvalidValuesError
	if !errors.As(e.Err, &iv) {
		return []InvalidValue{{Message: e.Err.Error()}}, 0
	}
	for _, fe := range iv.Errs {
		problems = append(problems, InvalidValue{Path: fe.Field, Message: fe.ErrorBody(), Location: e.sources.LocatePath(fe.Field)})
	}
	return problems, iv.Omitted
}

// withLimitHint adds to an input larger than its limit the flag that raises the limit.
func withLimitHint(err error, flag string) error {
	var tl *decode.TooLargeError
	if errors.As(err, &tl) {
		return fmt.Errorf("%w; raise the limit with --%s", err, flag)
	}
	return err
}

// stdinUser is an input whose name may be "-" (standard input), with the flag that gives it.
type stdinUser struct {
	flag, value string
}

// oneStdin fails when more than one input reads standard input: the second would read
// nothing.
func oneStdin(users ...stdinUser) error {
	var names []string
	for _, u := range users {
		if u.value == "-" {
			names = append(names, u.flag)
		}
	}
	if len(names) > 1 {
		return fmt.Errorf("%s all read standard input ('-'); only one input can: write the others to files", strings.Join(names, ", "))
	}
	return nil
}

// clusterStdinUsers are the cluster files that can read standard input.
func clusterStdinUsers(f cluster.Files) []stdinUser {
	return []stdinUser{{"--nodes", f.Nodes}, {"--drivers", f.Drivers}, {"--cluster-policy", f.ClusterPolicy}}
}

// truncateValue shortens a user value for a message: a 50 MB string is never echoed.
func truncateValue(s string) string {
	return validation.Truncate(s, validation.MaxQuotedValue)
}

// maxListed bounds the items a message lists.
const maxListed = 10

// capList joins at most maxListed items and says how many there are in all.
func capList(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s, ... (%d in all)", strings.Join(items[:maxListed], ", "), len(items))
}

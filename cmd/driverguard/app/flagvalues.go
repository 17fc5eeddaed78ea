package app

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// onceValue is a flag that takes one value: given a second time it is an error, not a silent
// replacement of the first (`--drivers a --drivers /dev/null` would plan every driver as a
// create; `--nodes a --nodes b` would judge b alone).
type onceValue struct {
	pflag.Value
	set   bool
	first string
}

func (o *onceValue) Set(s string) error {
	if o.set {
		return fmt.Errorf("given a second time (first %q): it takes one value", truncateValue(o.first))
	}
	o.set, o.first = true, s
	return o.Value.Set(s)
}

// repeatable reports whether a flag's value accumulates (-f, --set, --policy, --enforcement).
func repeatable(v pflag.Value) bool {
	if r, ok := v.(interface{ Repeatable() bool }); ok && r.Repeatable() {
		return true // -o: a format each, checked by the value itself
	}
	t := v.Type()
	return strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array") || t == "stringToString" || t == "count"
}

// singleUse makes every flag of cmd and its subcommands that takes one value refuse a second.
func singleUse(cmd *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if _, done := f.Value.(*onceValue); done || repeatable(f.Value) {
			return
		}
		f.Value = &onceValue{Value: f.Value}
	}
	cmd.Flags().VisitAll(wrap)
	cmd.PersistentFlags().VisitAll(wrap)
	for _, sub := range cmd.Commands() {
		singleUse(sub)
	}
}

// joinOptionalValues writes "--flag value" as "--flag=value" for the flags whose value is
// optional (--live, --check-images, post-render's --live auto|true|false) when value is one of
// the words the flag takes: pflag reads "--live false" as --live followed by an argument
// "false", which a command refuses ("unknown command false") — or worse, would take as a path.
func joinOptionalValues(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		out = append(out, a)
		name, ok := strings.CutPrefix(a, "--")
		if !ok || strings.Contains(name, "=") || i+1 == len(args) {
			continue
		}
		f := cmd.Flags().Lookup(name)
		if f == nil {
			f = cmd.InheritedFlags().Lookup(name)
		}
		if f != nil && f.NoOptDefVal != "" && slices.Contains(optionalValueWords(f.Value), args[i+1]) {
			out[len(out)-1] = a + "=" + args[i+1]
			i++
		}
	}
	return out
}

// optionalValueWords are the words a flag with an optional value takes as a separate argument:
// true and false for a bool, the words of a type named "a|b|c".
func optionalValueWords(v pflag.Value) []string {
	t := v.Type()
	if o, ok := v.(*onceValue); ok {
		t = o.Value.Type()
	}
	switch {
	case t == "bool":
		return []string{"true", "false"}
	case strings.Contains(t, "|"):
		return strings.Split(t, "|")
	}
	return nil
}

// enforcementFlag is --enforcement NAME=MODE, repeatable (or NAME=MODE,NAME=MODE): a policy
// named twice is an error, not the last one silently winning.
type enforcementFlag map[string]string

func (e *enforcementFlag) Type() string { return "stringToString" } // repeatable

func (e *enforcementFlag) String() string {
	parts := make([]string, 0, len(*e))
	for _, k := range slices.Sorted(maps.Keys(*e)) {
		parts = append(parts, k+"="+(*e)[k])
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (e *enforcementFlag) Set(s string) error {
	if *e == nil {
		*e = map[string]string{}
	}
	for _, pair := range strings.Split(s, ",") {
		name, mode, ok := strings.Cut(pair, "=")
		if !ok || name == "" {
			return fmt.Errorf("%q is not NAME=MODE: give a policy and one of deny, warn, audit (e.g. team.new_rule=audit)", truncateValue(pair))
		}
		if prev, seen := (*e)[name]; seen {
			return fmt.Errorf("--enforcement %s given twice (%s, then %s): give each policy one enforcement", truncateValue(name), truncateValue(prev), truncateValue(mode))
		}
		(*e)[name] = mode
	}
	return nil
}

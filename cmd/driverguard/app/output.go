package app

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/driverguard/driverguard/render"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// outputFlag validates -o against the formats a command supports.
type outputFlag struct {
	format  string
	allowed []string
}

func (o *outputFlag) validate() error {
	if slices.Contains(o.allowed, o.format) {
		return nil
	}
	return usageError(fmt.Errorf("unsupported output format %q: use one of %s", o.format, strings.Join(o.allowed, ", ")))
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeYAML(w io.Writer, v any) error {
	data, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// newTable returns a tabwriter for aligned, human-readable columns.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// formatSelector prints a selector as sorted k=v pairs; the empty selector is "{}".
func formatSelector(sel map[string]string) string {
	if len(sel) == 0 {
		return "{}"
	}
	return labels.Set(sel).String()
}

// printWarnings writes render warnings to stderr, one line each.
func printWarnings(w io.Writer, warnings []render.Warning) {
	for _, wn := range warnings {
		fmt.Fprintln(w, "Warning:", wn)
	}
}

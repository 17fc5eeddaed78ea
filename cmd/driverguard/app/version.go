package app

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// BuildInfo is what `driverguard version` reports, read from the binary's build information.
type BuildInfo struct {
	// Version is the main module's version ("(devel)" for a build from a source tree).
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from, Time its commit time, and
	// Modified whether the tree had uncommitted changes ("" and false when unknown).
	Revision string `json:"revision"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified"`
	// GoVersion is the Go toolchain that built it; Platform its GOOS/GOARCH.
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// readBuildInfo reads the running binary's build information.
func readBuildInfo() BuildInfo {
	bi := BuildInfo{Version: "(unknown)"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return bi
	}
	bi.Version, bi.GoVersion = info.Main.Version, info.GoVersion
	var goos, goarch string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			bi.Revision = s.Value
		case "vcs.time":
			bi.Time = s.Value
		case "vcs.modified":
			bi.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	bi.Platform = goos + "/" + goarch
	return bi
}

// String is the one-line form --version prints.
func (b BuildInfo) String() string {
	rev := b.Revision
	if rev == "" {
		rev = "unknown"
	}
	if b.Modified {
		rev += " (modified)"
	}
	return fmt.Sprintf("driverguard %s (revision %s, %s, %s)", b.Version, rev, b.GoVersion, b.Platform)
}

func newVersionCommand(s Streams) *cobra.Command {
	output := newOutput(formatTable, formatTable, formatJSON, formatYAML)
	cmd := &cobra.Command{
		Use:   "version [-o table|json|yaml]",
		Short: "Print the module version, VCS revision and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			bi := readBuildInfo()
			return output.print(s.Out, bi, func(w io.Writer) error {
				tw := newTable(w)
				fmt.Fprintf(tw, "Version:\t%s\n", bi.Version)
				fmt.Fprintf(tw, "Revision:\t%s\n", dash(bi.Revision))
				if bi.Time != "" {
					fmt.Fprintf(tw, "Commit time:\t%s\n", bi.Time)
				}
				fmt.Fprintf(tw, "Modified:\t%t\n", bi.Modified)
				fmt.Fprintf(tw, "Go version:\t%s\n", bi.GoVersion)
				fmt.Fprintf(tw, "Platform:\t%s\n", bi.Platform)
				return tw.Flush()
			})
		},
	}
	output.register(cmd.Flags())
	return cmd
}

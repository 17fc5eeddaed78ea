// Package charts embeds the driverguard Helm chart, so the CLI always renders the chart it
// ships with.
package charts

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// ChartDir is the folder of the chart inside FS.
const ChartDir = "driverguard"

// FS holds the chart's files, including dot-files such as .helmignore.
//
//go:embed all:driverguard
var FS embed.FS

var load = sync.OnceValues(func() (*chart.Chart, error) {
	var files []*loader.BufferedFile
	err := fs.WalkDir(FS, ChartDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := FS.ReadFile(p)
		if err != nil {
			return err
		}
		rel := p[len(ChartDir)+1:]
		files = append(files, &loader.BufferedFile{Name: path.Clean(rel), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded chart: %w", err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading the embedded chart: %w", err)
	}
	return ch, nil
})

// Driverguard returns the embedded driverguard chart. The chart is parsed once; callers must
// not modify it.
func Driverguard() (*chart.Chart, error) { return load() }

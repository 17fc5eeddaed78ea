package output

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/driverguard/driverguard/finding"
)

// The SARIF 2.1.0 log, as much of it as driverguard writes.
type (
	sarifLog struct {
		Schema  string     `json:"$schema,omitempty"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool    sarifTool      `json:"tool"`
		Results []sarifResult  `json:"results"`
		Props   map[string]any `json:"properties,omitempty"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name    string      `json:"name"`
		Version string      `json:"version,omitempty"`
		Rules   []sarifRule `json:"rules"`
	}
	sarifRule struct {
		ID               string         `json:"id"`
		ShortDescription sarifText      `json:"shortDescription"`
		Default          sarifConfig    `json:"defaultConfiguration"`
		Props            map[string]any `json:"properties,omitempty"`
	}
	sarifConfig struct {
		Level string `json:"level"`
	}
	sarifText struct {
		Text string `json:"text"`
	}
	sarifResult struct {
		RuleID    string            `json:"ruleId"`
		RuleIndex int               `json:"ruleIndex"`
		Level     string            `json:"level"`
		Message   sarifText         `json:"message"`
		Locations []sarifLocation   `json:"locations"`
		Props     map[string]string `json:"properties,omitempty"`
	}
	sarifLocation struct {
		Physical *sarifPhysical `json:"physicalLocation,omitempty"`
		Logical  []sarifLogical `json:"logicalLocations,omitempty"`
	}
	sarifPhysical struct {
		Artifact sarifArtifact `json:"artifactLocation"`
		Region   sarifRegion   `json:"region"`
	}
	sarifArtifact struct {
		URI string `json:"uri"`
	}
	sarifRegion struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn,omitempty"`
	}
	sarifLogical struct {
		FullyQualifiedName string `json:"fullyQualifiedName"`
		Kind               string `json:"kind"`
	}
)

// version is the driverguard version SARIF names as its tool's: the running binary's module
// version, read once.
var version = sync.OnceValue(func() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.Main.Version
	}
	return ""
})

// writeSARIF writes SARIF 2.1.0 for code scanning: every finding a result (deny an error,
// warn a warning, audit a note), located at the values key it came from; the rules the run
// judged by and those the results cite, with their titles from the registry.
func writeSARIF(w io.Writer, r *Report) error {
	run := sarifRun{Tool: sarifTool{Driver: sarifDriver{Name: "driverguard", Version: version(), Rules: []sarifRule{}}}, Results: []sarifResult{}}
	index := map[string]int{}
	rule := func(id string) int {
		if i, ok := index[id]; ok {
			return i
		}
		index[id] = len(run.Tool.Driver.Rules)
		sr := sarifRule{ID: id, ShortDescription: sarifText{Text: id}, Default: sarifConfig{Level: "error"}}
		if rr, ok := r.Rules.Rule(id); ok {
			sr.ShortDescription.Text = rr.Title
			sr.Default.Level = sarifLevel(rr.Enforcement)
			if rr.Level == finding.Warn && rr.Enforcement == finding.Deny {
				sr.Default.Level = "warning" // a warn body of an enforced policy
			}
			sr.Props = map[string]any{"home": rr.Home, "source": string(rr.Source)}
		}
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sr)
		return index[id]
	}
	for _, s := range r.Judged {
		for _, id := range s.Rules {
			rule(id)
		}
	}
	for _, f := range r.Findings {
		res := sarifResult{RuleID: f.Rule, RuleIndex: rule(f.Rule), Level: sarifLevel(f.Level), Locations: []sarifLocation{}}
		msg, loc, props := sarifWhere(f)
		res.Message.Text = msg
		if loc.Physical != nil || len(loc.Logical) > 0 {
			res.Locations = append(res.Locations, loc)
		}
		if len(props) > 0 {
			res.Props = props
		}
		run.Results = append(run.Results, res)
	}
	if r.Omitted > 0 || len(r.Properties) > 0 {
		run.Props = map[string]any{}
		for k, v := range r.Properties {
			run.Props[k] = v
		}
		if r.Omitted > 0 {
			run.Props["omittedResults"] = r.Omitted
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Version: "2.1.0", Runs: []sarifRun{run}})
}

// sarifWhere is a finding's message, location and properties: a values file line becomes a
// physical location; a value with no line says why in the message.
func sarifWhere(f finding.Finding) (string, sarifLocation, map[string]string) {
	msg := f.String()
	var l sarifLocation
	props := map[string]string{}
	if o := f.Object.String(); o != "" {
		l.Logical = append(l.Logical, sarifLogical{FullyQualifiedName: o, Kind: "resource"})
	}
	if len(f.Nodes) > 0 {
		props["nodes"] = strings.Join(f.Nodes, ",")
	}
	if f.Count > 0 {
		props["count"] = strconv.Itoa(f.Count)
	}
	loc := f.Location
	if loc == nil {
		return msg, l, props
	}
	if loc.ValuesPath != "" {
		l.Logical = append(l.Logical, sarifLogical{FullyQualifiedName: loc.ValuesPath, Kind: "property"})
		props["valuesPath"] = loc.ValuesPath
	}
	switch {
	case loc.Unwritten:
		msg += fmt.Sprintf(" [%s: not written in the values given (a chart default): no line to point at]", loc.ValuesPath)
	case loc.Flag != "":
		msg += fmt.Sprintf(" [%s: written on the command line (%s): no file line]", loc.ValuesPath, loc.Flag)
		props["valuesSource"] = loc.Flag
	case loc.File == "<stdin>" || loc.File == "-":
		msg += fmt.Sprintf(" [%s: standard input line %d, no file to point at]", loc.ValuesPath, loc.Line)
		props["valuesSource"] = "<stdin>"
	case loc.File != "" && loc.Line > 0:
		l.Physical = &sarifPhysical{Artifact: sarifArtifact{URI: fileURI(loc.File)}, Region: sarifRegion{StartLine: loc.Line, StartColumn: loc.Column}}
	}
	return msg, l, props
}

// fileURI is a file as a SARIF artifact URI: a relative path stays relative (to the directory
// the command ran in, which code scanning takes as the repository root), an absolute one
// becomes a file URI.
func fileURI(name string) string {
	if filepath.IsAbs(name) {
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(name)}).String()
	}
	return (&url.URL{Path: filepath.ToSlash(filepath.Clean(name))}).String()
}

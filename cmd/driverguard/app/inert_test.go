package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/output"
	"github.com/driverguard/driverguard/output/inerttest"
	"github.com/driverguard/driverguard/policy"
)

// hostileFiller sets every exported string a value holds — through structs, pointers, slices
// and maps — to a hostile value (inerttest.All, from offset on, each followed by an escape
// sequence), every bool to bools and every number to 2: a report made wholly of input.
type hostileFiller struct {
	values []string
	n      int
	bools  bool
	// exact gives each string the value as it is, without the escape sequence after it.
	exact bool
}

func (h *hostileFiller) next() string {
	v := h.values[h.n%len(h.values)]
	h.n++
	if h.exact {
		return v
	}
	return v + " \x1b[7m"
}

func (h *hostileFiller) fill(v reflect.Value, depth int) {
	if depth > 8 || !v.CanSet() {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(h.next())
	case reflect.Bool:
		v.SetBool(h.bools)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(2)
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(2)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(2)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		h.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				h.fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(h.next()))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			h.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			h.fill(k, depth+1)
			h.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	}
}

// hostile is a T made wholly of hostile values, the first field given inerttest.All()[offset].
func hostile[T any](offset int, bools bool) *T {
	var x T
	h := &hostileFiller{values: inerttest.All(), n: offset, bools: bools}
	h.fill(reflect.ValueOf(&x).Elem(), 0)
	return &x
}

// TestPlanMarkdownHostileValuesMakeNoLink renders change tickets from plans whose every
// string — the policies' messages and denials, reasons, drift details, blockers, images,
// selectors, versions, the values files and --set flags as given, the release, the warnings,
// the rollback's values and problems, every name — is a hostile value (a link, an image, an
// autolink, a bare URL GFM would link, HTML, backticks, pipes, line breaks, escape
// sequences), each field given every value in turn, with autoUpgrade (batches) and without
// (the manual procedure), every flag on and off. Parsed as a code host parses it (goldmark,
// GFM with Linkify), no ticket holds a link, image or autolink to a value's destination, nor
// any HTML; none holds a control character.
func TestPlanMarkdownHostileValuesMakeNoLink(t *testing.T) {
	values := inerttest.All()
	for _, bools := range []bool{true, false} {
		for _, manual := range []bool{false, true} {
			t.Run(fmt.Sprintf("flags %t, manual %t", bools, manual), func(t *testing.T) {
				for offset := range values {
					p := hostile[action.PlanReport](offset, bools)
					if manual {
						p.Batches = nil
					}
					var b bytes.Buffer
					require.NoError(t, output.Write(&b, []output.Target{{Format: output.Markdown}},
						&output.Report{Markdown: func(w io.Writer) error { return output.PlanMarkdown(w, p, p.Inputs.ReleaseName) }}))
					ticket := b.String()
					require.Contains(t, ticket, "## Rollback", "the whole ticket was written")
					inerttest.AssertInertKeeping(t, ticket, "\n\t") // a tab in the rollback's fenced YAML is the YAML's
					inerttest.AssertNoLiveMarkdown(t, b.Bytes())
					if t.Failed() {
						t.Logf("offset %d:\n%s", offset, ticket)
						return
					}
				}
			})
		}
	}
}

// hostilePolicy writes a policy that denies and warns about every RBLNDriver with a message
// holding every hostile value (inerttest.All), and returns its directory, itself named with
// a link.
func hostilePolicy(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "[p](mailto:p@"+inerttest.Evil+") www."+inerttest.Evil+" `x`")
	require.NoError(t, os.Mkdir(dir, 0o755))
	msg, err := json.Marshal("hostile " + strings.Join(inerttest.All(), " ~ "))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hostile.rego"), []byte(`package driverguard.hostile

deny contains msg if {
	input.object.kind == "RBLNDriver"
	msg := `+string(msg)+`
}

warn contains msg if {
	input.object.kind == "RBLNDriver"
	msg := `+string(msg)+`
}
`), 0o644))
	return dir
}

// TestPlanMarkdownHostilePolicyMakesNoLink: the ticket of a plan whose policy denies with a
// hostile message, made from a values file and a policy directory named with links, holds no
// link, image, autolink or HTML from them.
func TestPlanMarkdownHostilePolicyMakesNoLink(t *testing.T) {
	policy := hostilePolicy(t)
	values := filepath.Join(t.TempDir(), "[v](https:"+inerttest.Evil+") <b>.yaml")
	data, err := os.ReadFile(exampleValues)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(values, data, 0o644))
	r := run(t, "", "plan", "-f", values, "--nodes", exampleNodes, "--drivers", exampleDrivers, "--policy", policy,
		"--set-string", "driver.annotations.note=<http://"+inerttest.Evil+"/set>", "-o", "markdown")
	require.Equal(t, ExitInvalid, r.code, r.stderr)
	require.Contains(t, r.stdout, "## Denied (not applied)")
	require.Contains(t, r.stdout, `hostile \\x1b\[31mred`, "the denial's message, escaped")
	inerttest.AssertInert(t, r.stdout)
	inerttest.AssertNoLiveMarkdown(t, []byte(r.stdout))
}

// TestCheckMarkdownHostilePolicyMakesNoLink: -o markdown of the findings (output's writer):
// a policy's hostile message is text, one row of the table.
func TestCheckMarkdownHostilePolicyMakesNoLink(t *testing.T) {
	r := run(t, "", "check", "-f", exampleValues, "--nodes", exampleNodes, "--policy", hostilePolicy(t), "-o", "markdown")
	require.Equal(t, ExitInvalid, r.code, r.stderr)
	require.Contains(t, r.stdout, "hostile")
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		assert.True(t, strings.HasPrefix(line, "|") && strings.HasSuffix(line, "|"), "a row per finding: %q", line)
	}
	inerttest.AssertInert(t, r.stdout)
	inerttest.AssertNoLiveMarkdown(t, []byte(r.stdout))
}

// hostileNodes writes an inventory of candidate nodes whose names carry escape sequences, a
// carriage return, a bidi override and a line break (a file can hold what no API server
// would), each with its owner label.
func hostileNodes(t *testing.T) string {
	t.Helper()
	type obj = map[string]any
	var items []obj
	for i, name := range []string{"n\x1b[31m-red", "n\x1b]8;;http://x\x1b\\-osc", "n\r-cr", "n\u202e-bidi", "n\n-line\tcol"} {
		items = append(items, obj{"apiVersion": "v1", "kind": "Node", "metadata": obj{"name": fmt.Sprintf("%s-%d", name, i), "labels": obj{
			operator.LabelDeployDriver: "true", operator.LabelFamily: "atom", operator.LabelOSID: "ubuntu", operator.LabelOSVersion: "22.04",
			operator.LabelKernel: "6.8.0-90-generic", operator.LabelOwner: "rbln-driver\x1b[32m"}}})
	}
	data, err := json.Marshal(obj{"apiVersion": "v1", "kind": "List", "items": items})
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "nodes.json")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

// assertTerminalSafe: the table shows the escape sequence escaped (`\x1b[`), and holds no
// control character but its own line breaks, no bidi control and no byte that is not UTF-8.
func assertTerminalSafe(t *testing.T, out string) {
	t.Helper()
	assert.Contains(t, out, `\x1b[`, "the escape sequence is shown escaped")
	inerttest.AssertInert(t, out)
}

// TestTablesShowEscapeSequencesEscaped runs every table and text view with a message or a
// name holding "\x1b[" (and a carriage return, C1 controls, bidi overrides, a line break): each
// shows it escaped and lets no control character through.
func TestTablesShowEscapeSequencesEscaped(t *testing.T) {
	policy, nodes := hostilePolicy(t), hostileNodes(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"check", []string{"check", "-f", exampleValues, "--nodes", nodes, "--policy", policy}},
		{"preview", []string{"preview", "-f", exampleValues, "--nodes", nodes, "--policy", policy}},
		{"plan", []string{"plan", "-f", exampleValues, "--nodes", nodes, "--drivers", exampleDrivers, "--policy", policy}},
		{"plan manual", []string{"plan", "--set", "driver.image.tag=3.2.3", "--nodes", nodes, "--drivers", exampleDrivers}},
		{"audit", []string{"audit", "--nodes", nodes, "--drivers", exampleDrivers, "--policy", policy}},
		{"route", []string{"route", "--nodes", nodes, "--drivers", exampleDrivers}},
		{"check, the findings table to a file", []string{"check", "-f", exampleValues, "--policy", policy, "-o", "json", "-o", "table=" + filepath.Join(t.TempDir(), "t.txt")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "", tc.args...)
			require.Contains(t, []int{ExitOK, ExitInvalid}, r.code, r.stderr)
			out := r.stdout
			if slices.Contains(tc.args, "-o") {
				path := strings.TrimPrefix(tc.args[len(tc.args)-1], "table=")
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				out = string(data)
			}
			assertTerminalSafe(t, out)
		})
	}

	t.Run("plan's table of a plan made wholly of input", func(t *testing.T) {
		for _, bools := range []bool{true, false} {
			p := hostile[action.PlanReport](0, bools)
			var b bytes.Buffer
			require.NoError(t, output.Write(&b, []output.Target{{Format: output.Table}}, &output.Report{Table: func(w io.Writer) error { return output.PlanTable(w, p) }}))
			assertTerminalSafe(t, b.String())
		}
	})
	t.Run("test's suite report", func(t *testing.T) {
		res := hostile[action.TestRunResult](0, false)
		var b bytes.Buffer
		require.NoError(t, output.Write(&b, []output.Target{{Format: output.Table}}, output.TestReport(res)))
		assertTerminalSafe(t, b.String())
	})
	t.Run("review", func(t *testing.T) {
		review := hostile[admissionv1.AdmissionReview](0, false)
		var b bytes.Buffer
		require.NoError(t, output.Write(&b, []output.Target{{Format: output.Table}}, &output.Report{Table: func(w io.Writer) error { return output.ReviewTable(w, review) }}))
		assertTerminalSafe(t, b.String())
	})
	table := newOutput(formatTable, formatTable, formatJSON)
	t.Run("policy list and rules", func(t *testing.T) {
		rules := *hostile[[]action.Rule](0, false)
		var b bytes.Buffer
		require.NoError(t, table.print(&b, nil, func(w io.Writer) error { return printRules(w, rules) }))
		assertTerminalSafe(t, b.String())
	})
	t.Run("policy test", func(t *testing.T) {
		tests := *hostile[[]action.TestResult](0, false)
		var b bytes.Buffer
		require.NoError(t, table.print(&b, nil, func(w io.Writer) error { output.PolicyTests(w, tests, true); return nil }))
		assertTerminalSafe(t, b.String())
	})
	t.Run("route's tables", func(t *testing.T) {
		routing := hostile[action.Routing](0, false)
		images := *hostile[[]action.ImageResult](0, false)
		check := hostile[action.ImageCheck](0, true)
		var b bytes.Buffer
		require.NoError(t, table.print(&b, nil, func(w io.Writer) error {
			output.RouteTable(w, routing)
			output.RouteImages(w, images, *check)
			return nil
		}))
		assertTerminalSafe(t, b.String())
	})
	t.Run("render's table", func(t *testing.T) {
		rendered := &action.Rendered{}
		rendered.ClusterPolicy.Name = "cp\x1b[31m"
		rendered.Drivers = make([]v1alpha1.RBLNDriver, 1)
		rendered.Drivers[0].Name, rendered.Drivers[0].Spec.Version = "d\x1b[31m", "3.2.2\r"
		rendered.Drivers[0].Spec.NodeSelector = map[string]string{"k": "v\u202e"}
		var b bytes.Buffer
		require.NoError(t, printRender(&b, formatTable, rendered))
		assertTerminalSafe(t, b.String())
	})
	t.Run("policy input's table", func(t *testing.T) {
		var b bytes.Buffer
		d := newDocumentStream(&b, formatTable, true)
		in := hostile[action.Input](0, false)
		in.Routing = nil
		require.NoError(t, d.write(in))
		require.NoError(t, d.close())
		assertTerminalSafe(t, b.String())
	})
	t.Run("render warnings on standard error", func(t *testing.T) {
		warnings := *hostile[[]action.Warning](0, false)
		var b bytes.Buffer
		printWarnings(&b, warnings)
		assertTerminalSafe(t, b.String())
		assert.Equal(t, len(warnings), strings.Count(b.String(), "\n"), "a line per warning: a line break in one is escaped")
	})
}

// TestOutputsMayNotShareAStream: two outputs on one stream — a table and JSON on standard
// output however named, one file by two names — are a usage error (exit 2) that names both
// outputs and the fix, before anything is written.
func TestOutputsMayNotShareAStream(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "out.json")
	for _, tc := range []struct {
		name    string
		outputs []string
		want    string
	}{
		{"a table and JSON to /dev/stdout", []string{"-o", "table", "-o", "json=/dev/stdout"},
			"-o table and -o json=/dev/stdout both write to standard output: write json to a file of its own (-o json=FILE)"},
		{"two formats to /dev/stdout", []string{"-o", "json=/dev/stdout", "-o", "sarif=/dev/stdout"},
			"-o json=/dev/stdout and -o sarif=/dev/stdout both write to standard output"},
		{"- and standard output", []string{"-o", "sarif=-", "-o", "table"}, "-o sarif and -o table both write to standard output"},
		{"/dev/fd/1 and /dev/stdout", []string{"-o", "junit=/dev/fd/1", "-o", "json=/dev/stdout"}, "both write to standard output"},
		{"/proc/self/fd/1 and a table", []string{"-o", "table", "-o", "json=/proc/self/fd/1"}, "both write to standard output"},
		{"one file twice", []string{"-o", "json=" + file, "-o", "sarif=" + filepath.Join(dir, ".", "out.json")}, "give each its own file"},
	} {
		for _, cmd := range [][]string{
			{"check", "-f", exampleValues},
			{"plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers},
		} {
			t.Run(tc.name+" "+cmd[0], func(t *testing.T) {
				r := run(t, "", append(cmd, tc.outputs...)...)
				assert.Equal(t, ExitUsage, r.code)
				assert.Contains(t, r.stderr, tc.want)
				assert.Empty(t, r.stdout, "nothing was written")
				_, err := os.Stat(file)
				assert.ErrorIs(t, err, os.ErrNotExist, "nothing was written")
			})
		}
	}
}

// filled is a T whose every exported string is value, every bool bools and every number 2.
func filled[T any](value string, bools bool) *T {
	var x T
	h := &hostileFiller{values: []string{value}, bools: bools, exact: true}
	h.fill(reflect.ValueOf(&x).Elem(), 0)
	return &x
}

// breaking is a value that would break a text view if printed as it is: a line break, a tab
// (a column of a table), a carriage return and an escape sequence. It starts with a capital
// (sentence leaves it so) and holds no ':' or '/' (an image reference is split at them).
const breaking = "V\n\t\r\x1b[31m"

// inPlace is a value as wide as breaking escaped, and as plain as a value can be.
var inPlace = "X" + strings.Repeat("x", len(output.Escape(breaking))-1)

// assertEachValueInPlace renders a view twice, from input whose every string is breaking and
// from the same input whose every string is inPlace, and asserts that the view escaped each
// value (output.Escape) in place: the first holds `\n`, `\t`, `\r` and `\x1b[31m`, the same
// number of lines as the second and no control character but its own line breaks, and is the
// second but for the value (every column of every line where it was), even written straight
// to a buffer, without the InertWriter every table is written through.
func assertEachValueInPlace(t *testing.T, view func(value string) string) {
	t.Helper()
	got, want := view(breaking), view(inPlace)
	require.NotEqual(t, want, strings.ReplaceAll(want, inPlace, ""), "the view shows the values")
	for _, escaped := range []string{`\n`, `\t`, `\r`, `\x1b[31m`} {
		assert.Contains(t, got, escaped, "the value shows escaped")
	}
	assert.Equal(t, strings.Count(want, "\n"), strings.Count(got, "\n"), "a line break in a value starts no line")
	inerttest.AssertInert(t, got)
	assert.Equal(t, want, strings.ReplaceAll(got, output.Escape(breaking), inPlace), "each value in place: no line and no column more")
	if t.Failed() {
		t.Logf("with the breaking value:\n%s\nwith a plain one:\n%s", got, want)
	}
}

// TestTextViewsKeepAValueInPlace: every table and text view of standard output, given input
// whose every string holds a line break, a tab, a carriage return and an escape sequence,
// shows each value escaped where a plain value would be — plan (every cell, the denials,
// drift, warnings, blockers, images and the rollout, in batches and by hand), route's nodes,
// DaemonSets, ties, invalid resources and image check, preview (the resources' table and
// fields, the warnings, the node changes and the verdict), check (the objects, driver losses,
// render warnings, drift and what it was judged against), audit, policy test, policy input's
// table and render's table.
func TestTextViewsKeepAValueInPlace(t *testing.T) {
	write := func(f func(io.Writer) error) string {
		var b bytes.Buffer
		require.NoError(t, f(&b))
		return b.String()
	}
	for _, bools := range []bool{true, false} {
		for _, manual := range []bool{false, true} {
			t.Run(fmt.Sprintf("plan, flags %t, manual %t", bools, manual), func(t *testing.T) {
				assertEachValueInPlace(t, func(v string) string {
					p := filled[action.PlanReport](v, bools)
					if manual {
						p.Batches = nil
					}
					return write(func(w io.Writer) error { return output.PlanTable(w, p) })
				})
			})
		}
		t.Run(fmt.Sprintf("route, checked %t", bools), func(t *testing.T) {
			assertEachValueInPlace(t, func(v string) string {
				routing, images, check := filled[action.Routing](v, bools), filled[[]action.ImageResult](v, bools), filled[action.ImageCheck](v, true)
				return write(func(w io.Writer) error {
					output.RouteTable(w, routing)
					output.RouteImages(w, *images, *check)
					return nil
				})
			})
		})
		t.Run(fmt.Sprintf("preview, flags %t", bools), func(t *testing.T) {
			assertEachValueInPlace(t, func(v string) string {
				rep := filled[action.PreviewReport](v, bools)
				return write(func(w io.Writer) error { return output.PreviewTable(w, rep) })
			})
		})
		t.Run(fmt.Sprintf("check, flags %t", bools), func(t *testing.T) {
			assertEachValueInPlace(t, func(v string) string {
				rep := filled[action.CheckReport](v, bools)
				return write(func(w io.Writer) error { return output.CheckTable(w, rep) })
			})
		})
		t.Run(fmt.Sprintf("audit, flags %t", bools), func(t *testing.T) {
			assertEachValueInPlace(t, func(v string) string {
				res := filled[action.AuditResult](v, bools)
				for _, r := range res.Outcome.Reports {
					for i := range r.Results {
						r.Results[i].Status = action.AuditFail // the label is the result's, upper-cased
					}
				}
				return write(func(w io.Writer) error { return output.AuditTable(w, res) })
			})
		})
		t.Run(fmt.Sprintf("policy test, verbose %t", bools), func(t *testing.T) {
			assertEachValueInPlace(t, func(v string) string {
				tests := *filled[[]action.TestResult](v, false)
				for i := range tests {
					tests[i].Output = "" // its line breaks are the output's own: below
				}
				return write(func(w io.Writer) error { output.PolicyTests(w, tests, bools); return nil })
			})
		})
	}
	t.Run("policy test, each line of a test's output", func(t *testing.T) {
		var b bytes.Buffer
		output.PolicyTests(&b, []action.TestResult{{Outcome: action.TestFail, Package: "p", Name: "test_x", File: "x.rego", Line: 1,
			Output: "first\t\x1b[31mline\nsecond\rline\n"}}, false)
		assert.Equal(t, "FAIL  p.test_x (x.rego:1)\n      first\\t\\x1b[31mline\n      second\\rline\n0/1 passed; bundled library: 0/0 passed\n", b.String())
	})
	for _, routed := range []bool{true, false} {
		t.Run(fmt.Sprintf("policy input's table, routed %t", routed), func(t *testing.T) {
			assertEachValueInPlace(t, func(v string) string {
				in := filled[action.Input](v, false)
				if !routed {
					in.Routing = nil
				}
				return write(func(w io.Writer) error {
					d := newDocumentStream(w, formatTable, true)
					if err := d.write(in); err != nil {
						return err
					}
					return d.close()
				})
			})
		})
	}
	t.Run("render's table", func(t *testing.T) {
		assertEachValueInPlace(t, func(v string) string {
			r := &action.Rendered{}
			r.ClusterPolicy.Name = v
			r.Drivers = make([]v1alpha1.RBLNDriver, 2)
			for i := range r.Drivers {
				r.Drivers[i].Name, r.Drivers[i].Spec.Version = v, v
				r.Drivers[i].Spec.NodeSelector = map[string]string{"k": v}
			}
			return write(func(w io.Writer) error { return printRender(w, formatTable, r) })
		})
	})
}

// TestStandardErrorKeepsAValueInPlace: what the commands write on standard error — the render
// warnings, the input warnings (audit, route), the release plan --release reads, post-render's
// denial and pass messages (a node that loses its driver, a policy's message, the context
// judged against), the libraries' warnings and the Error line — shows each value escaped where
// a plain value would be: a node name, a policy message or a file name holding a line break, a
// tab, a carriage return or an escape sequence cannot start a line or act on the terminal.
func TestStandardErrorKeepsAValueInPlace(t *testing.T) {
	write := func(f func(io.Writer)) string {
		var b bytes.Buffer
		f(&b)
		return b.String()
	}
	t.Run("render warnings", func(t *testing.T) {
		assertEachValueInPlace(t, func(v string) string {
			warnings := *filled[[]action.Warning](v, false)
			return write(func(w io.Writer) { printWarnings(w, warnings) })
		})
	})
	t.Run("input warnings", func(t *testing.T) {
		assertEachValueInPlace(t, func(v string) string {
			return write(func(w io.Writer) { output.InputWarnings(w, []string{"--nodes " + v + " holds no nodes", v}) })
		})
	})
	t.Run("the release plan --release reads", func(t *testing.T) {
		assertEachValueInPlace(t, func(v string) string {
			d := filled[action.DeployedRelease](v, false)
			return write(func(w io.Writer) { output.PlanReleaseNotice(w, planRelease(d), true) })
		})
	})
	for _, passed := range []bool{true, false} {
		t.Run(fmt.Sprintf("post-render, passed %t", passed), func(t *testing.T) {
			assertEachValueInPlace(t, func(v string) string {
				res := filled[action.PostRenderResult](v, passed)
				var out, errOut, parent bytes.Buffer
				s := Streams{Out: &out, Err: &errOut, ParentStderr: func(msg []byte) { parent.Write(msg) }}
				err := (&postRenderOptions{parentStderr: true}).print(s, res)
				if passed {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, errSilent)
				}
				assert.Equal(t, errOut.String(), parent.String(), "the parent's standard error is told the same")
				return errOut.String()
			})
		})
	}
	t.Run("libraries' warnings", func(t *testing.T) {
		assertEachValueInPlace(t, func(v string) string {
			return write(func(w io.Writer) {
				l := slog.New(newWarningHandler(w))
				l.Warn("node "+v+" not found", "err", errors.New("node "+v+": gone"))
				l.Error(v)
			})
		})
	})
	t.Run("the Error line", func(t *testing.T) {
		assertEachValueInPlace(t, func(v string) string {
			path := filepath.Join("dir", v+".yaml")
			err := fmt.Errorf("reading nodes: %w", &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist})
			load := fmt.Errorf("loading policies: %w", &policy.LoadError{Problems: []policy.Problem{
				{File: filepath.Join("p", v+".rego"), Line: 1, Message: "x"}, {File: "q.rego", Message: "y"}}})
			given := fmt.Errorf("--nodes %s: yaml: line 1: did not find expected key", v)
			joined := fmt.Errorf("writing: %w", errors.Join(errors.New("first"), &fs.PathError{Op: "write", Path: v, Err: fs.ErrClosed}))
			return "Error: " + errorLine(err, nil) + "\nError: " + errorLine(load, nil) + "\nError: " + errorLine(given, givenValues(nil, []string{"check", "--nodes=" + v})) +
				"\nError: " + errorLine(joined, nil) + "\n"
		})
	})
	t.Run("the Error line keeps the message's own lines", func(t *testing.T) {
		err := &policy.LoadError{Problems: []policy.Problem{{File: "a\x1b[31m.rego", Message: "x"}, {File: "b.rego", Message: "y\x1b[0m"}}}
		assert.Equal(t, "policy: 2 problems:\n  a\\x1b[31m.rego: x\n  b.rego: y\\x1b[0m", errorLine(err, nil))
	})
}

// TestStandardErrorIsInert runs the commands with a hostile file name (a line break, a tab, a
// carriage return and an escape sequence in it), nodes with hostile names and a policy with a
// hostile message, through what each says on standard error: an Error line naming a file not
// found or not YAML, a policy directory that cannot be read or does not parse, an unknown
// flag, the input warnings of route and audit, policy test's "no tests", post-render's denial
// and warnings. Standard error holds the value escaped (`\n`, `\x1b[31m`) and no control
// character but its own line breaks.
func TestStandardErrorIsInert(t *testing.T) {
	noCluster(t)
	dir := t.TempDir()
	name := filepath.Join(dir, "f"+breaking)
	escaped := output.Escape(name)
	empty := name + ".yaml"
	require.NoError(t, os.WriteFile(empty, []byte("apiVersion: v1\nkind: List\nitems: []\n"), 0o644))
	notYAML := name + "-bad.yaml"
	require.NoError(t, os.WriteFile(notYAML, []byte("a: [\n"), 0o644))
	noTests := name + "-no-tests"
	require.NoError(t, os.Mkdir(noTests, 0o755))
	badPolicy := name + "-policy"
	require.NoError(t, os.Mkdir(badPolicy, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(badPolicy, "p"+breaking+".rego"), []byte("package driverguard.bad\ndeny contains 1 if {\n"), 0o644))
	warnPolicy := filepath.Join(dir, "warn")
	require.NoError(t, os.Mkdir(warnPolicy, 0o755))
	msg, err := json.Marshal("hostile " + strings.Join(inerttest.All(), " ~ "))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(warnPolicy, "warn.rego"), []byte("package driverguard.hostile\n\nwarn contains msg if {\n\tinput.object.kind == \"RBLNDriver\"\n\tmsg := "+string(msg)+"\n}\n"), 0o644))
	rendered := helmRendered(t, exampleValues)
	policy, nodes := hostilePolicy(t), hostileNodes(t)
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"a nodes file not found", "", []string{"check", "-f", exampleValues, "--nodes", name}, ExitUsage, "Error: reading nodes: open " + escaped + ": no such file or directory\n"},
		{"a nodes file not YAML", "", []string{"plan", "-f", exampleValues, "--nodes=" + notYAML}, ExitUsage, output.Escape(notYAML)},
		{"a policy directory not found", "", []string{"check", "-f", exampleValues, "--policy", name}, ExitUsage, escaped + ": cannot read the policy directory"},
		{"a policy file that does not parse", "", []string{"check", "-f", exampleValues, "--policy", badPolicy}, ExitUsage, output.Escape(filepath.Join(badPolicy, "p"+breaking+".rego"))},
		{"an unknown flag", "", []string{"check", "--nodes" + breaking}, ExitUsage, "Error: unknown flag: --nodes" + output.Escape(breaking) + "\n"},
		{"route's input warnings", "", []string{"route", "--nodes", empty, "--drivers", exampleDrivers}, ExitOK, "Warning: --nodes " + output.Escape(empty) + " holds no nodes"},
		{"audit's input warnings", "", []string{"audit", "--nodes", empty, "--drivers", exampleDrivers, "-o", "yaml"}, ExitOK, "Warning: --nodes " + output.Escape(empty) + " holds no nodes"},
		{"policy test without tests", "", []string{"policy", "test", warnPolicy, noTests}, ExitOK, "Warning: no tests (test_* rules) in " + warnPolicy + ", " + output.Escape(noTests) + "\n"},
		{"post-render's denial", rendered, []string{"post-render", "--policy", policy}, ExitInvalid, `FAIL  driverguard.hostile: hostile \x1b[31mred\x1b[0m ~ \x1b]8;;http://`},
		{"post-render's warnings", rendered, []string{"post-render", "--policy", warnPolicy}, ExitOK, `WARN   RBLNDriver/rbln-driver: driverguard.hostile: hostile \x1b[31mred`},
		{"check with hostile nodes and policy", "", []string{"check", "-f", exampleValues, "--nodes", nodes, "--policy", policy}, ExitInvalid, ""},
		{"plan with hostile nodes and policy", "", []string{"plan", "-f", exampleValues, "--nodes", nodes, "--drivers", exampleDrivers, "--policy", policy}, ExitInvalid, ""},
		{"route with hostile nodes", "", []string{"route", "--nodes", nodes, "--drivers", exampleDrivers}, ExitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.stdin, tc.args...)
			require.Equal(t, tc.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			inerttest.AssertInert(t, r.stderr)
			for _, line := range strings.Split(r.stderr, "\n") {
				assert.NotContains(t, line, "\x1b", "no escape sequence")
			}
			if t.Failed() {
				t.Logf("standard error:\n%s", r.stderr)
			}
		})
	}
}

// TestYAMLOutputsCarryControlCharacters: a name holding control characters JSON leaves raw
// (DEL, C1) does not make -o yaml fail; the YAML escapes it and reads back as the name.
func TestYAMLOutputsCarryControlCharacters(t *testing.T) {
	nodes := hostileNodes(t)
	data, err := os.ReadFile(nodes)
	require.NoError(t, err)
	data = []byte(strings.ReplaceAll(string(data), "-red", `-red\u007f\u0085`))
	require.NoError(t, os.WriteFile(nodes, data, 0o644))
	for _, args := range [][]string{
		{"audit", "--nodes", nodes, "--drivers", exampleDrivers, "-o", "yaml"},
		{"route", "--nodes", nodes, "--drivers", exampleDrivers, "-o", "yaml"},
		{"plan", "--set", "driver.image.tag=3.2.3", "--nodes", nodes, "--drivers", exampleDrivers, "-o", "yaml"},
	} {
		t.Run(args[0], func(t *testing.T) {
			r := run(t, "", args...)
			assert.NotEqual(t, ExitUsage, r.code, r.stderr)
			assert.NotContains(t, r.stdout, "\x7f")
			assert.NotContains(t, r.stdout, "\u0085")
			var doc any
			require.NoError(t, yaml.Unmarshal([]byte(r.stdout), &doc), r.stdout)
		})
	}
}

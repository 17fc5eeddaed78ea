// Package layout_test holds the repository's layering rules (docs/development.md, "Map"): no
// import circle between top-level folders (render, release, webhook, ...), which Go would not
// refuse on its own — it forbids circles between packages, not between folders of packages —;
// every import points down the layers of the map or within a layer; the commands reach the
// core only through package action; and webhook/ is the admission handlers and their
// transport, not the serve process (no audit, leader election or manager).
package layout_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/driverguard/driverguard"

// commandImports are the only packages of this module cmd/driverguard/app may import: the
// action layer, the cluster readers' option types, the API types, the operator's label keys,
// the findings model and its writers.
var commandImports = []string{"action", "cluster", "api/decode", "api/v1alpha1", "api/validation", "operator", "finding", "output"}

// layers are the top-level folders from the top of docs/development.md's map down. An import
// goes to a lower layer or stays within its own layer (TestNoCircleBetweenTopLevelFolders keeps
// those acyclic).
var layers = [][]string{
	{"cmd", "hack", "test"},
	{"action"},
	{"output"}, // the commands' views take the domain's results, never action's (#44)
	{"serve"},
	{"webhook", "cluster", "plan", "release", "audit", "suite"},
	{"decision"},
	{"routing", "policy", "render", "registry"},
	{"api", "charts", "config", "finding", "operator"},
}

// notInWebhook are imports that belong to the serve process (package serve), not to the
// admission handlers and transport of webhook/: the audit, the manager (whose options hold the
// leader election), leader election itself and the certificate rotator. (controller-runtime's
// metrics package, which the transport's metrics use, links client-go's leader election for its
// metrics provider: a dependency of webhook/, not something it does — the direct imports are
// checked, and the module's own packages transitively.)
var notInWebhook = []string{
	module + "/audit",
	module + "/serve",
	"k8s.io/client-go/tools/leaderelection",
	"sigs.k8s.io/controller-runtime/pkg/leaderelection",
	"sigs.k8s.io/controller-runtime/pkg/manager",
	"github.com/open-policy-agent/cert-controller/pkg/rotator",
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// folderGraph maps each top-level folder to the top-level folders its packages import
// (test files excluded: tests may reach across).
func folderGraph(t *testing.T) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	for _, p := range listPackages(t) {
		from := topFolder(p.ImportPath)
		if _, ok := graph[from]; !ok {
			graph[from] = nil
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if to := topFolder(imp); to != from && !slices.Contains(graph[from], to) {
				graph[from] = append(graph[from], to)
			}
		}
	}
	return graph
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", module+"/...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
}

func topFolder(importPath string) string {
	rest := strings.TrimPrefix(importPath, module+"/")
	first, _, _ := strings.Cut(rest, "/")
	return first
}

// findCycle returns one circle of the graph as a path a → b → … → a, or nil.
func findCycle(graph map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = open
		stack = append(stack, n)
		for _, m := range graph[n] {
			switch state[m] {
			case open:
				i := slices.Index(stack, m)
				return append(slices.Clone(stack[i:]), m)
			case unseen:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return nil
	}
	names := make([]string, 0, len(graph))
	for n := range graph {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if state[n] == unseen {
			if c := visit(n); c != nil {
				return c
			}
		}
	}
	return nil
}

func TestFindCycle(t *testing.T) {
	require.Nil(t, findCycle(map[string][]string{"a": {"b"}, "b": {"c"}, "c": nil}))
	require.Equal(t, []string{"a", "b", "a"}, findCycle(map[string][]string{"a": {"b"}, "b": {"a"}}))
	require.Equal(t, []string{"b", "c", "d", "b"}, findCycle(map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": {"b"}}))
}

func TestNoCircleBetweenTopLevelFolders(t *testing.T) {
	graph := folderGraph(t)
	require.Contains(t, graph, "render", "go list saw the module")
	if c := findCycle(graph); c != nil {
		t.Fatalf("top-level folders import each other in a circle: %s; move the package that closes it to the folder it belongs to (docs/development.md has the map)", strings.Join(c, " → "))
	}
}

func TestCommandsReachTheCoreThroughActions(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"/cmd/driverguard/app" {
			continue
		}
		for _, imp := range p.Imports {
			rel, ok := strings.CutPrefix(imp, module+"/")
			if ok && !slices.Contains(commandImports, rel) {
				t.Errorf("cmd/driverguard/app imports %s: commands are flags, one action's Run and a printer; reach the core through package action", rel)
			}
		}
		return
	}
	t.Fatal("go list did not list cmd/driverguard/app")
}

func TestImportsPointDownTheLayers(t *testing.T) {
	layerOf := map[string]int{}
	for i, l := range layers {
		for _, f := range l {
			layerOf[f] = i
		}
	}
	graph := folderGraph(t)
	for from, tos := range graph {
		lf, ok := layerOf[from]
		if !ok {
			t.Errorf("top-level folder %s has no layer: add it to layers in test/layout and to the map in docs/development.md", from)
			continue
		}
		for _, to := range tos {
			if lt, ok := layerOf[to]; ok && lt < lf {
				t.Errorf("%s imports %s, a layer above it (docs/development.md, Map): move what %s needs down, or the importing code up", from, to, from)
			}
		}
	}
}

func TestWebhookIsHandlersAndTransport(t *testing.T) {
	seen := false
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if rel != "webhook" && !strings.HasPrefix(rel, "webhook/") {
			continue
		}
		seen = seen || rel == "webhook"
		for _, imp := range p.Imports {
			for _, banned := range notInWebhook {
				if imp == banned || strings.HasPrefix(imp, banned+"/") {
					t.Errorf("%s imports %s: the serve process (manager, leader election, certificates, audit) is package serve's; webhook/ keeps the handlers and the transport", rel, imp)
				}
			}
		}
		for _, dep := range p.Deps {
			if dep == module+"/audit" || dep == module+"/serve" {
				t.Errorf("%s depends on %s: the admission path does not link the audit or the serve assembly", rel, strings.TrimPrefix(dep, module+"/"))
			}
		}
	}
	require.True(t, seen, "go list listed webhook")
}

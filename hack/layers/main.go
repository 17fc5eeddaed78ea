// Command layers checks that no top-level folders of the module import each other in a
// circle: it maps every import of `go list ./...` (test imports are not layering) to the
// first path element after the module and reports each cycle of that graph. Run it from the
// repository's root: go run ./hack/layers [-v].
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

func main() {
	verbose := flag.Bool("v", false, "print the graph")
	flag.Parse()
	format := "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"
	out, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		fail(err)
	}
	module := strings.TrimSpace(string(out)) + "/"
	out, err = exec.Command("go", "list", "-f", format, "./...").Output()
	if err != nil {
		fail(err)
	}
	graph := map[string]map[string]bool{}
	for line := range bytes.Lines(out) {
		fields := strings.Fields(string(line))
		from := folder(fields[0], module)
		for _, imp := range fields[1:] {
			if to := folder(imp, module); to != "" && to != from {
				if graph[from] == nil {
					graph[from] = map[string]bool{}
				}
				graph[from][to] = true
			}
		}
	}
	if *verbose {
		for _, from := range sortedKeys(graph) {
			fmt.Printf("%s -> %s\n", from, strings.Join(sortedKeys(graph[from]), " "))
		}
	}
	cycles := 0
	for _, from := range sortedKeys(graph) {
		for _, to := range sortedKeys(graph[from]) {
			if path := find(graph, to, from); path != nil && from < to {
				fmt.Printf("circle: %s -> %s\n", from, strings.Join(path, " -> "))
				cycles++
			}
		}
	}
	if cycles > 0 {
		os.Exit(1)
	}
	fmt.Println("no circle between top-level folders")
}

// folder is the top-level folder of a package of the module ("" outside it).
func folder(pkg, module string) string {
	rest, ok := strings.CutPrefix(pkg, module)
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(rest, "/")
	return first
}

// find is a path from one folder to another (nil for none), breadth first.
func find(graph map[string]map[string]bool, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		if at == to {
			path := []string{at}
			for p := prev[at]; p != ""; p = prev[p] {
				path = append([]string{p}, path...)
			}
			return path
		}
		for _, next := range sortedKeys(graph[at]) {
			if _, seen := prev[next]; !seen {
				prev[next] = at
				queue = append(queue, next)
			}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "layers:", err)
	os.Exit(2)
}

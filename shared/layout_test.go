// Package shared_test checks the layout the code layout section of
// servers/README.md describes: shared/ holds only what more than one tree
// uses, and nothing in it depends on the trees that use it.
package shared_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/knowngood/knowngood/"

// trees are the top-level folders whose packages may use shared/.
var trees = []string{"servers", "loadgen", "scripts", "docker"}

// imports maps every package of the module (relative to it) to what it and
// its tests import from the module.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f",
		"{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}",
		module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		graph[pkg] = nil
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, module); ok && rel != pkg && !slices.Contains(graph[pkg], rel) {
				graph[pkg] = append(graph[pkg], rel)
			}
		}
	}
	return graph
}

func tree(pkg string) string { return strings.Split(pkg, "/")[0] }

// TestNoArrowUp: shared/ imports nothing from the trees that use it.
func TestNoArrowUp(t *testing.T) {
	for pkg, deps := range imports(t) {
		if tree(pkg) != "shared" {
			continue
		}
		for _, dep := range deps {
			if tree(dep) != "shared" {
				t.Errorf("%s imports %s: shared/ must not depend on the trees that use it", pkg, dep)
			}
		}
	}
}

// TestSharedIsShared: every package under shared/ is used, directly or
// through another shared package, by at least two trees; one that only
// the servers use belongs under servers/internal.
func TestSharedIsShared(t *testing.T) {
	graph := imports(t)
	users := map[string]map[string]bool{} // shared package -> trees using it
	var visit func(from, pkg string)
	visit = func(from, pkg string) {
		if users[pkg] == nil {
			users[pkg] = map[string]bool{}
		}
		if users[pkg][from] {
			return
		}
		users[pkg][from] = true
		for _, dep := range graph[pkg] {
			if tree(dep) == "shared" {
				visit(from, dep)
			}
		}
	}
	for pkg, deps := range graph {
		if !slices.Contains(trees, tree(pkg)) {
			continue
		}
		for _, dep := range deps {
			if tree(dep) == "shared" {
				visit(tree(pkg), dep)
			}
		}
	}
	for pkg := range graph {
		if tree(pkg) != "shared" || pkg == "shared" {
			continue
		}
		if n := len(users[pkg]); n < 2 {
			var names []string
			for name := range users[pkg] {
				names = append(names, name)
			}
			t.Errorf("%s is used by %d trees (%v): move it into the tree that uses it", pkg, n, names)
		}
	}
}

// TestLoadgenIsClientOnly: the load client's binary imports no server code,
// so that what it reports never depends on the code it measures.
func TestLoadgenIsClientOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"loadgen").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for dep := range strings.Lines(string(out)) {
		rel, ok := strings.CutPrefix(strings.TrimSpace(dep), module)
		if ok && (tree(rel) == "servers" || tree(rel) == "scripts") {
			t.Errorf("loadgen's binary depends on %s", rel)
		}
	}
}

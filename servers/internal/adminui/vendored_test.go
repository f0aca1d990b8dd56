package adminui

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/shared/prereq"
)

// nodeModules is where make deps installs scripts/package.json.
const nodeModules = "../../../scripts/node_modules"

// packages maps each folder of npm/ to the npm package it holds, and
// the files of that package that are vendored: every file under each
// folder named, less the source maps.
var packages = []struct {
	dir, name string
	folders   []string // the package's folders vendored whole (less *.map)
	files     []string // and single files
}{
	{"socket.io-admin-ui", "@socket.io/admin-ui", []string{"ui/dist"}, []string{"LICENSE", "package.json"}},
	{"mdi-font", "@mdi/font", nil, []string{"LICENSE", "package.json", "css/materialdesignicons.min.css", "fonts/materialdesignicons-webfont.woff2"}},
}

// TestVendoredFiles: every file in npm/ is byte for byte the file of
// the same path in the package scripts/package.json pins (make deps
// installs it), and every file the package has there is vendored, so
// that an upgrade is one copy: the versions in scripts/package.json,
// make deps, then copy the files this test names.
func TestVendoredFiles(t *testing.T) {
	pins := pinned(t)
	for _, p := range packages {
		root := filepath.Join(nodeModules, filepath.FromSlash(p.name))
		if _, err := os.Stat(filepath.Join(root, "package.json")); err != nil {
			prereq.Need(t, "npm "+p.name+" in scripts/node_modules", err)
		}
		if v := version(t, filepath.Join(root, "package.json")); v != pins[p.name] {
			t.Errorf("scripts/node_modules holds %s %s, scripts/package.json pins %s: run make deps", p.name, v, pins[p.name])
			continue
		}
		want := slices.Clone(p.files)
		for _, folder := range p.folders {
			_ = filepath.WalkDir(filepath.Join(root, folder), func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && !strings.HasSuffix(path, ".map") {
					rel, _ := filepath.Rel(root, path)
					want = append(want, filepath.ToSlash(rel))
				}
				return err
			})
		}
		var have []string
		_ = fs.WalkDir(vendored, "npm/"+p.dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				have = append(have, strings.TrimPrefix(path, "npm/"+p.dir+"/"))
			}
			return err
		})
		slices.Sort(want)
		slices.Sort(have)
		dir := "servers/internal/adminui/npm/" + p.dir
		for _, rel := range want {
			if !slices.Contains(have, rel) {
				t.Errorf("%s/%s is missing: cp scripts/node_modules/%s/%s %s/%s", dir, rel, p.name, rel, dir, rel)
			}
		}
		for _, rel := range have {
			if !slices.Contains(want, rel) {
				t.Errorf("%s/%s is not in %s %s: git rm it", dir, rel, p.name, pins[p.name])
				continue
			}
			got, _ := fs.ReadFile(vendored, "npm/"+p.dir+"/"+rel)
			orig, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, orig) {
				t.Errorf("%s/%s differs from %s %s's: cp scripts/node_modules/%s/%s %s/%s", dir, rel, p.name, pins[p.name], p.name, rel, dir, rel)
			}
		}
	}
	if v := version(t, "npm/socket.io-admin-ui/package.json"); v != Version {
		t.Errorf("adminui.Version is %s, the vendored package is %s", Version, v)
	}
}

// pinned are the versions scripts/package.json pins.
func pinned(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../../scripts/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	for _, p := range packages {
		if pkg.Dependencies[p.name] == "" {
			t.Fatalf("scripts/package.json does not pin %s", p.name)
		}
	}
	return pkg.Dependencies
}

func version(t *testing.T, path string) string {
	t.Helper()
	var b []byte
	var err error
	if strings.HasPrefix(path, "npm/") {
		b, err = fs.ReadFile(vendored, path)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	return pkg.Version
}

package layers

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/rackstream/rackstream/"

// tools is the layer of harnesses, suites and examples: above every other
// layer but the binary's.
const tools = 100

// layerTable is docs/architecture.md's layer table: package (or prefix
// ending in "/...") to layer, and the same-layer imports it allows.
type layerTable struct {
	layer     map[string]int
	prefixes  map[string]int
	sameLayer map[[2]string]bool
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readTable parses the table after the "<!-- layers" marker and the list
// after the "<!-- same-layer imports" marker.
func readTable(t *testing.T, path string) layerTable {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lt := layerTable{layer: map[string]int{}, prefixes: map[string]int{}, sameLayer: map[[2]string]bool{}}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "<!-- layers"):
			section = "layers"
			continue
		case strings.HasPrefix(line, "<!-- same-layer imports"):
			section = "same"
			continue
		case line == "" || strings.HasPrefix(line, "#"):
			if section == "same" && strings.HasPrefix(line, "#") {
				section = ""
			}
			continue
		}
		switch section {
		case "layers":
			if !strings.HasPrefix(line, "|") {
				section = ""
				continue
			}
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) < 2 {
				continue
			}
			name := strings.TrimSpace(cells[0])
			level := tools
			if name != "tools" {
				n, err := strconv.Atoi(name)
				if err != nil {
					continue // the header and its rule
				}
				level = n
			}
			for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
				if p, ok := strings.CutSuffix(m[1], "/..."); ok {
					lt.prefixes[p] = level
				} else {
					lt.layer[m[1]] = level
				}
			}
		case "same":
			if !strings.HasPrefix(line, "- ") {
				section = ""
				continue
			}
			if ms := backticked.FindAllStringSubmatch(line, -1); len(ms) == 2 {
				lt.sameLayer[[2]string{ms[0][1], ms[1][1]}] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lt.layer) == 0 {
		t.Fatalf("%s: no layer table after its <!-- layers --> marker", path)
	}
	return lt
}

// levelOf is pkg's layer, and whether the table gives it one.
func (lt layerTable) levelOf(pkg string) (int, bool) {
	if n, ok := lt.layer[pkg]; ok {
		return n, true
	}
	for p, n := range lt.prefixes {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return n, true
		}
	}
	return 0, false
}

// pkgImports is one package's module imports, from its non-test files and
// from its test files.
type pkgImports struct {
	prod, test []string
}

// moduleImports parses every Go file under root (imports only) and returns
// each package directory's imports of the module, relative to it.
func moduleImports(t *testing.T, root string) map[string]*pkgImports {
	t.Helper()
	out := map[string]*pkgImports{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "target") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		pi := out[rel]
		if pi == nil {
			pi = &pkgImports{}
			out[rel] = pi
		}
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			dep, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			if strings.HasSuffix(name, "_test.go") {
				pi.test = append(pi.test, dep)
			} else {
				pi.prod = append(pi.prod, dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// violations checks imports against the table and returns one line a fault.
func violations(lt layerTable, pkgs map[string]*pkgImports) []string {
	var bad []string
	for pkg, pi := range pkgs {
		level, ok := lt.levelOf(pkg)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s has no layer in docs/architecture.md's table", pkg))
			continue
		}
		for _, dep := range append(slices.Clone(pi.prod), pi.test...) {
			if dep == "cmd" || strings.HasPrefix(dep, "cmd/") {
				bad = append(bad, fmt.Sprintf("%s imports %s: nothing imports cmd/", pkg, dep))
			}
		}
		for _, dep := range pi.prod {
			dl, ok := lt.levelOf(dep)
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%s imports %s, which has no layer", pkg, dep))
			case dl > level:
				bad = append(bad, fmt.Sprintf("%s (layer %s) imports %s (layer %s): a lower layer never imports a higher one", pkg, name(level), dep, name(dl)))
			case dl == level && level != tools && !lt.sameLayer[[2]string{pkg, dep}]:
				bad = append(bad, fmt.Sprintf("%s imports %s of its own layer %s, which the table does not allow", pkg, dep, name(level)))
			}
		}
	}
	sort.Strings(bad)
	return slices.Compact(bad)
}

func name(level int) string {
	if level == tools {
		return "tools"
	}
	return strconv.Itoa(level)
}

func TestImportsFollowTheLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	lt := readTable(t, filepath.Join(root, "docs", "architecture.md"))
	for _, v := range violations(lt, moduleImports(t, root)) {
		t.Error(v)
	}
}

// TestTheCheckFindsEachKindOfFault feeds the checker imports that break
// each rule, so that a checker that finds nothing cannot pass.
func TestTheCheckFindsEachKindOfFault(t *testing.T) {
	lt := layerTable{
		layer:     map[string]int{"leaf": 0, "core": 1, "edge": 1, "top": 2, "cmd/bin": 3},
		prefixes:  map[string]int{"harness": tools},
		sameLayer: map[[2]string]bool{{"edge", "core"}: true},
	}
	cases := []struct {
		name string
		pkgs map[string]*pkgImports
		want string
	}{
		{"a lower layer imports a higher one", map[string]*pkgImports{"leaf": {prod: []string{"core"}}}, "leaf (layer 0) imports core (layer 1)"},
		{"a same-layer import the table does not list", map[string]*pkgImports{"core": {prod: []string{"edge"}}}, "core imports edge of its own layer 1"},
		{"a package without a layer", map[string]*pkgImports{"stray": {}}, "stray has no layer"},
		{"an import of a package without a layer", map[string]*pkgImports{"top": {prod: []string{"stray"}}}, "top imports stray, which has no layer"},
		{"a test imports cmd", map[string]*pkgImports{"harness/x": {test: []string{"cmd/bin"}}}, "harness/x imports cmd/bin: nothing imports cmd/"},
		{"a layer imports a harness", map[string]*pkgImports{"top": {prod: []string{"harness/x"}}}, "top (layer 2) imports harness/x (layer tools)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := violations(lt, c.pkgs)
			if len(got) != 1 || !strings.Contains(got[0], c.want) {
				t.Errorf("violations = %q, want one containing %q", got, c.want)
			}
		})
	}
	allowed := map[string]*pkgImports{
		"top":       {prod: []string{"leaf", "core", "edge"}, test: []string{"harness/x"}},
		"edge":      {prod: []string{"core", "leaf"}},
		"harness/x": {prod: []string{"top"}},
	}
	if got := violations(lt, allowed); len(got) != 0 {
		t.Errorf("allowed imports reported: %q", got)
	}
}

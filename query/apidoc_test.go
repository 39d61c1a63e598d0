package query

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	apiDocPath    = "../docs/http-api.md"
	apiDocMarker  = "<!-- routes"
	pageRoutesSrc = "page/page.go"
)

// TestHTTPAPIDocumentsEveryRoute checks docs/http-api.md's route table
// against the routes the query server and the placement page register:
// every route with a method is documented, and every documented route is
// registered. The routes are read from the source of routes.go and
// page/page.go (an http.ServeMux cannot list its patterns), and each of
// the query server's is confirmed on a live mux: a request for it is
// routed to that very pattern.
func TestHTTPAPIDocumentsEveryRoute(t *testing.T) {
	documented := documentedRoutes(t)
	server := registeredRoutes(t, "routes.go")
	page := registeredRoutes(t, pageRoutesSrc)
	registered := append(slices.Clone(server), page...)
	for _, r := range registered {
		if !slices.Contains(documented, r) {
			t.Errorf("route %q is registered but not in %s", r, apiDocPath)
		}
	}
	for _, r := range documented {
		if !slices.Contains(registered, r) {
			t.Errorf("%s documents %q, which nothing registers", apiDocPath, r)
		}
	}

	c := newCluster(t, clusterOpts{members: 1, tweak: func(_ int, o *Options) { o.Profiling = true }})
	mux := c.nodes[0].srv.mux
	for _, r := range server {
		method, pattern, _ := strings.Cut(r, " ")
		path := strings.NewReplacer("{store}", "counts", "{key...}", "a/b", "{$}", "").Replace(pattern)
		if _, got := mux.Handler(httptest.NewRequest(method, path, nil)); got != r {
			t.Errorf("%s %s is routed to %q, want %q", method, path, got, r)
		}
	}
}

// documentedRoutes returns the first column of the table after the routes
// marker of docs/http-api.md.
func documentedRoutes(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(apiDocPath)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), apiDocMarker)
	if !ok {
		t.Fatalf("%s has no %s marker", apiDocPath, apiDocMarker)
	}
	var routes []string
	for i, line := range strings.Split(table, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i < 2 { // the header and the separator
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		routes = append(routes, strings.Trim(strings.TrimSpace(cell), "`"))
	}
	if len(routes) == 0 {
		t.Fatalf("no routes in the table after %s's marker", apiDocPath)
	}
	return routes
}

// registeredRoutes returns the patterns with a method that file registers
// with HandleFunc or Handle: a string literal, or "GET "+ a field of each
// element of the table the enclosing range statement walks.
func registeredRoutes(t *testing.T, file string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	var tables []*ast.CompositeLit // the tables of the enclosing range statements
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.RangeStmt:
			if lit, ok := x.X.(*ast.CompositeLit); ok {
				tables = append(tables, lit)
				ast.Inspect(x.Body, visit)
				tables = tables[:len(tables)-1]
				return false
			}
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle") || len(x.Args) == 0 {
				return true
			}
			switch arg := x.Args[0].(type) {
			case *ast.BasicLit:
				if p := unquote(t, arg); strings.Contains(p, " ") {
					routes = append(routes, p)
				}
			case *ast.BinaryExpr:
				prefix, ok := arg.X.(*ast.BasicLit)
				if !ok || len(tables) == 0 {
					t.Fatalf("%s: a route pattern this test cannot read", file)
				}
				for _, row := range tables[len(tables)-1].Elts {
					first := row.(*ast.CompositeLit).Elts[0].(*ast.BasicLit)
					routes = append(routes, unquote(t, prefix)+unquote(t, first))
				}
			}
		}
		return true
	}
	ast.Inspect(f, visit)
	if len(routes) == 0 {
		t.Fatalf("no routes found in %s: the scan is broken", file)
	}
	return routes
}

func unquote(t *testing.T, lit *ast.BasicLit) string {
	t.Helper()
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

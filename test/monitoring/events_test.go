package monitoring

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const eventsDoc = "docs/events.md"

// TestEventsDocListsEveryReason: docs/events.md lists exactly the Event reasons the
// controllers use. The code's reasons are the string constants named event… or Event… in
// internal/controller, and the condition reasons the EtcdCluster controller announces on a
// transition (the membership.Reason… constants in transitionEvents, status_write.go).
func TestEventsDocListsEveryReason(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	inCode := eventConstants(t, filepath.Join(root, "internal", "controller"))
	for _, r := range transitionReasons(t, root) {
		inCode[r] = "transitionEvents"
	}
	// transitionEvents announces BootstrapStalled as DeadlineExceeded, which is listed above.
	delete(inCode, "BootstrapStalled")
	inDoc := docReasons(t, filepath.Join(root, eventsDoc))
	for reason, where := range inCode {
		if !inDoc[reason] {
			t.Errorf("reason %s (%s) is not in %s", reason, where, eventsDoc)
		}
	}
	for reason := range inDoc {
		if _, ok := inCode[reason]; !ok {
			t.Errorf("%s lists %s, which no controller uses", eventsDoc, reason)
		}
	}
	if len(inCode) < 40 {
		t.Errorf("found only %d reasons in the code; has the way they are declared changed?", len(inCode))
	}
}

var eventConstName = regexp.MustCompile(`^[eE]vent[A-Z]`)

// eventConstants returns the values of string constants named event… or Event… in the
// non-test Go files under dir, with the file that declares each.
func eventConstants(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	for path, f := range parseGoFilesUnder(tb, dir) {
		for name, value := range stringConstants(f) {
			if eventConstName.MatchString(name) {
				out[value] = filepath.Base(path)
			}
		}
	}
	return out
}

// parseGoFilesUnder parses the non-test Go files under dir, by path.
func parseGoFilesUnder(tb testing.TB, dir string) map[string]*ast.File {
	tb.Helper()
	out := map[string]*ast.File{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		out[path] = f
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// parseGoFiles parses the non-test Go files of the package in dir.
func parseGoFiles(tb testing.TB, dir string) []*ast.File {
	tb.Helper()
	var out []*ast.File
	for path, f := range parseGoFilesUnder(tb, dir) {
		if filepath.Dir(path) == dir {
			out = append(out, f)
		}
	}
	return out
}

// stringConstants returns the constants of f whose value is a string literal.
func stringConstants(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil {
						out[name.Name] = v
					}
				}
			}
		}
	}
	return out
}

// transitionReasons returns the values of the membership.Reason… constants in the table of
// transitions that transitionEvents announces.
func transitionReasons(tb testing.TB, root string) []string {
	tb.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "internal", "controller", "etcdcluster", "status_write.go"), nil, 0)
	if err != nil {
		tb.Fatal(err)
	}
	consts := map[string]string{}
	for _, file := range parseGoFiles(tb, filepath.Join(root, "internal", "membership")) {
		for k, v := range stringConstants(file) {
			consts[k] = v
		}
	}
	var out []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "transitionEvents" {
			continue
		}
		// The reasons are the entries of the function's table (a composite literal); the other
		// membership.Reason… it names are comparisons (the end of a roll).
		ast.Inspect(fn, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			out = append(out, reasonSelectors(tb, lit, consts)...)
			return false
		})
	}
	if len(out) == 0 {
		tb.Fatal("transitionEvents names no membership.Reason… constant in a table; has it moved?")
	}
	return out
}

// reasonSelectors returns the values of the membership.Reason… constants named under n.
func reasonSelectors(tb testing.TB, n ast.Node, consts map[string]string) []string {
	tb.Helper()
	var out []string
	ast.Inspect(n, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "membership" && strings.HasPrefix(sel.Sel.Name, "Reason") {
				v, known := consts[sel.Sel.Name]
				if !known {
					tb.Fatalf("membership.%s: no string constant of that name", sel.Sel.Name)
				}
				out = append(out, v)
			}
		}
		return true
	})
	return out
}

// docReason matches a table row's Reason cell: | Normal | `Reason` | … or | Warning | `Reason` | ….
var docReason = regexp.MustCompile("(?m)^\\| *(?:Normal|Warning) *\\| *`([A-Za-z]+)` *\\|")

func docReasons(tb testing.TB, path string) map[string]bool {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range docReason.FindAllStringSubmatch(string(data), -1) {
		out[m[1]] = true
	}
	return out
}

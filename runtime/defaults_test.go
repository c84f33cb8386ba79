package runtime_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A literal is an expression of literals alone (and time's units): 3 *
// time.Second, "/dev/i2c-1", 64 << 10. A default written as one in two
// places is a default written twice.
func literal(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.ParenExpr:
		return literal(e.X)
	case *ast.UnaryExpr:
		return literal(e.X)
	case *ast.BinaryExpr:
		return literal(e.X) && literal(e.Y)
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && x.Name == "time"
	}
	return false
}

// notable is a literal that names a setting rather than happening to be
// a small count: a string, a duration, a fraction, or a number of 100 or
// more.
func notable(e ast.Expr, text string) bool {
	if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.INT {
		n, err := strconv.ParseInt(b.Value, 0, 64)
		return err == nil && n >= 100
	}
	return text != "0" && text != `""`
}

type place struct{ where, text string }

// moduleFiles parses every non-test Go file of the module.
func moduleFiles(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	fset, files := token.NewFileSet(), map[string]*ast.File{}
	root := filepath.Join("..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() && path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (a patched dependency)
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasPrefix(path, filepath.Join(root, "tests")) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files[path] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fset, files
}

// filledLiteral is the literal an unset field is filled with, written
// in place: `if x == 0 { x = 8 * time.Second }` (also "" and nil), or
// def(&x, "none"); nil when n is neither.
func filledLiteral(n ast.Node) ast.Expr {
	switch n := n.(type) {
	case *ast.IfStmt:
		cond, ok := n.Cond.(*ast.BinaryExpr)
		if !ok || (cond.Op != token.EQL && cond.Op != token.LEQ) || n.Else != nil || len(n.Body.List) != 1 {
			return nil
		}
		if y, ok := cond.Y.(*ast.BasicLit); !ok || (y.Value != "0" && y.Value != `""`) {
			return nil
		}
		as, ok := n.Body.List[0].(*ast.AssignStmt)
		if ok && len(as.Rhs) == 1 && literal(as.Rhs[0]) {
			return as.Rhs[0]
		}
	case *ast.CallExpr:
		if f, ok := n.Fun.(*ast.Ident); ok && strings.HasPrefix(f.Name, "def") && len(n.Args) == 2 && literal(n.Args[1]) {
			return n.Args[1]
		}
	}
	return nil
}

// TestNoDefaultWrittenTwice holds every setting's default to one place
// (issue 30, item 1; room.vote_timeout had been written in six): a
// default is a constant named Default… in the package that owns it, and
//   - no two packages declare a default of the same name and value: one
//     names the other's (floor.DefaultJoinWait = election.DefaultJoinWait);
//   - no unset field is filled with a literal written in place (a
//     duration, a number from 100, or a string some default holds): it
//     names its owner's constant.
func TestNoDefaultWrittenTwice(t *testing.T) {
	fset, files := moduleFiles(t)
	render := func(e ast.Expr) string {
		var b bytes.Buffer
		printer.Fprint(&b, fset, e)
		return b.String()
	}
	byNameValue := map[string][]string{} // "DefaultX = value": where
	strs := map[string]bool{}            // the string literals defaults hold
	var fills []place
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if !strings.HasPrefix(name.Name, "Default") || i >= len(vs.Values) || !literal(vs.Values[i]) {
							continue
						}
						text := render(vs.Values[i])
						key := name.Name + " = " + text
						byNameValue[key] = append(byNameValue[key], fset.Position(name.Pos()).String())
						if b, ok := vs.Values[i].(*ast.BasicLit); ok && b.Kind == token.STRING {
							strs[text] = true
						}
					}
				}
			case *ast.FuncDecl:
				if d.Body == nil {
					continue
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					if v := filledLiteral(n); v != nil {
						fills = append(fills, place{fmt.Sprintf("%s in %s", fset.Position(v.Pos()), d.Name.Name), render(v)})
					}
					return true
				})
			}
		}
	}
	for key, where := range byNameValue {
		if len(where) > 1 {
			slices.Sort(where)
			t.Errorf("%s is written %d times (%s): let one name the other", key, len(where), strings.Join(where, ", "))
		}
	}
	for _, p := range fills {
		if b, ok := literalOf(p.text); ok && (b.Kind != token.STRING || strs[p.text]) || !ok {
			t.Errorf("%s: the default %s is written in place: name the owner's constant", p.where, p.text)
		}
	}
}

// literalOf parses a rendered literal: a lone literal, or ok false for
// an expression (a duration such as 5 * time.Second, a shift), which is
// always notable. A lone number is notable from 100.
func literalOf(text string) (*ast.BasicLit, bool) {
	e, err := parser.ParseExpr(text)
	if err != nil {
		return nil, false
	}
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.SUB { // -1: "none"
		e = u.X
	}
	b, ok := e.(*ast.BasicLit)
	if !ok {
		return nil, false
	}
	if b.Kind == token.INT {
		if n, err := strconv.ParseInt(b.Value, 0, 64); err == nil && n < 100 {
			return &ast.BasicLit{Kind: token.STRING}, true // small counts are not defaults of note
		}
		return b, false
	}
	return b, true
}

package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// file is one parsed source file and where it came from.
type file struct {
	ast     *ast.File
	pkg     *pkg
	source  string            // "core/pkg/..." or "aws/pkg/...", for the listing
	imports map[string]string // local name -> import path
}

// pkg is one Go package: its package-level values and functions.
type pkg struct {
	path   string
	values map[string]valueSpec // consts and vars by name
	funcs  map[string]funcSpec
	files  []*file
}

type valueSpec struct {
	expr ast.Expr
	file *file
}

type funcSpec struct {
	decl *ast.FuncDecl
	file *file
}

// universe is every package of both trees, by import path.
type universe struct {
	fset *token.FileSet
	pkgs map[string]*pkg
}

func newUniverse() *universe {
	return &universe{fset: token.NewFileSet(), pkgs: map[string]*pkg{}}
}

// skipDir reports directories that hold test helpers and fakes, not the
// shipped controllers.
func skipDir(rel string) bool {
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == "test" || part == "fake" || part == "testdata" {
			return true
		}
	}
	return false
}

// load parses root/pkg/** as packages under modulePath; label prefixes the
// source paths in the listing.
func (u *universe) load(root, modulePath, label string) error {
	base := filepath.Join(root, "pkg")
	return filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if skipDir(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(u.fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		importPath := modulePath + "/" + filepath.ToSlash(filepath.Dir(rel))
		p := u.pkgs[importPath]
		if p == nil {
			p = &pkg{path: importPath, values: map[string]valueSpec{}, funcs: map[string]funcSpec{}}
			u.pkgs[importPath] = p
		}
		fl := &file{ast: f, pkg: p, source: label + "/" + filepath.ToSlash(rel), imports: imports(f)}
		p.files = append(p.files, fl)
		collectDecls(p, fl)
		return nil
	})
}

func imports(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, is := range f.Imports {
		path, _ := strconv.Unquote(is.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if is.Name != nil {
			name = is.Name.Name
		}
		m[name] = path
	}
	return m
}

func collectDecls(p *pkg, fl *file) {
	for _, decl := range fl.ast.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				p.funcs[d.Name.Name] = funcSpec{decl: d, file: fl}
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						p.values[name.Name] = valueSpec{expr: vs.Values[i], file: fl}
					}
				}
			}
		}
	}
}

// dynamicLabels names the label expressions upstream computes at runtime
// and that the listing records as one placeholder; the parity test expands
// them. An unknown unresolvable expression fails the run, so an upstream
// change cannot slip through as a silently shorter label list.
var dynamicLabels = map[string]string{
	// core pkg/controllers/metrics/node: one label per well-known node
	// label (the part after "/", snake_case).
	"sets.New(lo.Values(getWellKnownLabels())...).UnsortedList()": "{wellKnownLabels}",
}

// str resolves expr, in fl's scope, to a string constant.
func (u *universe) str(expr ast.Expr, fl *file) (string, error) {
	switch e := expr.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			return strconv.Unquote(e.Value)
		}
	case *ast.ParenExpr:
		return u.str(e.X, fl)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			l, err := u.str(e.X, fl)
			if err != nil {
				return "", err
			}
			r, err := u.str(e.Y, fl)
			return l + r, err
		}
	case *ast.Ident, *ast.SelectorExpr:
		v, ok := u.lookup(e, fl)
		if ok {
			return u.str(v.expr, v.file)
		}
	case *ast.CallExpr:
		// string(x) conversions of typed constants.
		if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "string" && len(e.Args) == 1 {
			return u.str(e.Args[0], fl)
		}
	}
	return "", fmt.Errorf("%s: cannot resolve %s to a string", u.fset.Position(expr.Pos()), render(expr))
}

// strs resolves expr, in fl's scope, to a list of strings.
func (u *universe) strs(expr ast.Expr, fl *file) ([]string, error) {
	if ph, ok := dynamicLabels[render(expr)]; ok {
		return []string{ph}, nil
	}
	switch e := expr.(type) {
	case *ast.Ident:
		if e.Name == "nil" {
			return nil, nil
		}
		if v, ok := u.lookup(e, fl); ok {
			return u.strs(v.expr, v.file)
		}
	case *ast.SelectorExpr:
		if v, ok := u.lookup(e, fl); ok {
			return u.strs(v.expr, v.file)
		}
	case *ast.CompositeLit:
		var out []string
		for _, elt := range e.Elts {
			s, err := u.str(elt, fl)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	case *ast.CallExpr:
		return u.callStrs(e, fl)
	}
	return nil, fmt.Errorf("%s: cannot resolve %s to a string list", u.fset.Position(expr.Pos()), render(expr))
}

// callStrs resolves append(...) and calls of package functions whose body
// is one return statement.
func (u *universe) callStrs(e *ast.CallExpr, fl *file) ([]string, error) {
	if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "append" {
		out, err := u.strs(e.Args[0], fl)
		if err != nil {
			return nil, err
		}
		for i, a := range e.Args[1:] {
			if e.Ellipsis.IsValid() && i == len(e.Args)-2 {
				more, err := u.strs(a, fl)
				if err != nil {
					return nil, err
				}
				out = append(out, more...)
				continue
			}
			s, err := u.str(a, fl)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	if fn, ok := u.lookupFunc(e.Fun, fl); ok && len(e.Args) == 0 {
		body := fn.decl.Body.List
		if len(body) == 1 {
			if ret, ok := body[0].(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
				return u.strs(ret.Results[0], fn.file)
			}
		}
	}
	return nil, fmt.Errorf("%s: cannot resolve call %s to a string list", u.fset.Position(e.Pos()), render(e))
}

// lookup finds the package-level value an identifier or pkg.Name refers to.
func (u *universe) lookup(expr ast.Expr, fl *file) (valueSpec, bool) {
	switch e := expr.(type) {
	case *ast.Ident:
		v, ok := fl.pkg.values[e.Name]
		return v, ok
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok {
			return valueSpec{}, false
		}
		p := u.pkgs[fl.imports[x.Name]]
		if p == nil {
			return valueSpec{}, false
		}
		v, ok := p.values[e.Sel.Name]
		return v, ok
	}
	return valueSpec{}, false
}

func (u *universe) lookupFunc(expr ast.Expr, fl *file) (funcSpec, bool) {
	switch e := expr.(type) {
	case *ast.Ident:
		f, ok := fl.pkg.funcs[e.Name]
		return f, ok
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok {
			return funcSpec{}, false
		}
		if p := u.pkgs[fl.imports[x.Name]]; p != nil {
			f, ok := p.funcs[e.Sel.Name]
			return f, ok
		}
	}
	return funcSpec{}, false
}

// render prints an expression compactly, for errors and dynamicLabels.
func render(expr ast.Expr) string {
	var b strings.Builder
	writeExpr(&b, expr)
	return b.String()
}

func writeExpr(b *strings.Builder, expr ast.Expr) {
	switch e := expr.(type) {
	case *ast.Ident:
		b.WriteString(e.Name)
	case *ast.BasicLit:
		b.WriteString(e.Value)
	case *ast.SelectorExpr:
		writeExpr(b, e.X)
		b.WriteString("." + e.Sel.Name)
	case *ast.CallExpr:
		writeExpr(b, e.Fun)
		b.WriteString("(")
		for i, a := range e.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, a)
		}
		if e.Ellipsis.IsValid() {
			b.WriteString("...")
		}
		b.WriteString(")")
	case *ast.IndexExpr:
		writeExpr(b, e.X)
		b.WriteString("[")
		writeExpr(b, e.Index)
		b.WriteString("]")
	case *ast.StarExpr:
		b.WriteString("*")
		writeExpr(b, e.X)
	default:
		fmt.Fprintf(b, "<%T>", expr)
	}
}

// sortedFiles lists every file of the universe in a stable order.
func (u *universe) sortedFiles() []*file {
	var all []*file
	for _, p := range u.pkgs {
		all = append(all, p.files...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].source < all[j].source })
	return all
}

package main

import (
	"fmt"
	"go/ast"
	"sort"
	"strings"
)

// metric is one upstream metric family.
type metric struct {
	Name   string
	Type   string // counter, gauge, histogram, summary, or "desc" for a NewDesc (type chosen at collect time)
	Labels []string
	Source string
}

// event is one upstream event reason at one construction site.
type event struct {
	Reason string
	Kind   string // involved object's kind, when the constructor's parameter names it
	Source string
}

// constructors maps a metric constructor's name to the metric type and the
// positions of its options and label arguments (-1: none).
var constructors = map[string]struct {
	typ               string
	optsArg, labelArg int
	operatorpkg       bool // opmetrics.NewPrometheus*: (registry, opts, labels)
}{
	"NewPrometheusGauge":     {"gauge", 1, 2, true},
	"NewPrometheusCounter":   {"counter", 1, 2, true},
	"NewPrometheusHistogram": {"histogram", 1, 2, true},
	"NewPrometheusSummary":   {"summary", 1, 2, true},
	"NewGaugeVec":            {"gauge", 0, 1, false},
	"NewCounterVec":          {"counter", 0, 1, false},
	"NewHistogramVec":        {"histogram", 0, 1, false},
	"NewSummaryVec":          {"summary", 0, 1, false},
	"NewGauge":               {"gauge", 0, -1, false},
	"NewCounter":             {"counter", 0, -1, false},
	"NewHistogram":           {"histogram", 0, -1, false},
	"NewSummary":             {"summary", 0, -1, false},
}

const (
	opmetricsPath = "github.com/awslabs/operatorpkg/metrics"
	clientGolang  = "github.com/prometheus/client_golang/prometheus"
	eventsPath    = corePath + "/pkg/events"
)

// metrics finds every metric constructor call in the universe.
func (u *universe) metrics() ([]metric, error) {
	var out []metric
	var errs []string
	for _, fl := range u.sortedFiles() {
		ast.Inspect(fl.ast, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			imp := fl.imports[x.Name]
			if sel.Sel.Name == "NewDesc" && imp == clientGolang {
				m, err := u.desc(call, fl)
				if err != nil {
					errs = append(errs, err.Error())
					return true
				}
				out = append(out, m)
				return true
			}
			c, ok := constructors[sel.Sel.Name]
			if !ok || (c.operatorpkg && imp != opmetricsPath) || (!c.operatorpkg && imp != clientGolang) {
				return true
			}
			m, err := u.constructed(call, fl, c.typ, c.optsArg, c.labelArg)
			if err != nil {
				errs = append(errs, err.Error())
				return true
			}
			out = append(out, m)
			return true
		})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("resolving metrics:\n%s", strings.Join(errs, "\n"))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (u *universe) constructed(call *ast.CallExpr, fl *file, typ string, optsArg, labelArg int) (metric, error) {
	opts := call.Args[optsArg]
	if un, ok := opts.(*ast.UnaryExpr); ok {
		opts = un.X
	}
	lit, ok := opts.(*ast.CompositeLit)
	if !ok {
		return metric{}, fmt.Errorf("%s: options %s are not a literal", u.fset.Position(call.Pos()), render(opts))
	}
	parts := map[string]string{}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key := kv.Key.(*ast.Ident).Name
		if key != "Namespace" && key != "Subsystem" && key != "Name" {
			continue
		}
		s, err := u.str(kv.Value, fl)
		if err != nil {
			return metric{}, err
		}
		parts[key] = s
	}
	m := metric{Name: fqName(parts["Namespace"], parts["Subsystem"], parts["Name"]), Type: typ, Source: fl.source}
	if labelArg >= 0 {
		labels, err := u.strs(call.Args[labelArg], fl)
		if err != nil {
			return metric{}, err
		}
		m.Labels = labels
	}
	return m, nil
}

func (u *universe) desc(call *ast.CallExpr, fl *file) (metric, error) {
	name, err := u.str(call.Args[0], fl)
	if err != nil {
		return metric{}, err
	}
	labels, err := u.strs(call.Args[2], fl)
	if err != nil {
		return metric{}, err
	}
	return metric{Name: name, Type: "desc", Labels: labels, Source: fl.source}, nil
}

// fqName joins the non-empty parts with "_", as prometheus.BuildFQName.
func fqName(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "_")
}

// events finds every events.Event literal with a Reason.
func (u *universe) events() ([]event, error) {
	var out []event
	var errs []string
	for _, fl := range u.sortedFiles() {
		for _, decl := range fl.ast.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok || !u.isEvent(lit.Type, fl) {
					return true
				}
				e := event{Source: fl.source}
				for _, elt := range lit.Elts {
					kv, ok := elt.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch kv.Key.(*ast.Ident).Name {
					case "Reason":
						r, err := u.str(kv.Value, fl)
						if err != nil {
							errs = append(errs, err.Error())
						}
						e.Reason = r
					case "InvolvedObject":
						e.Kind = paramKind(fn, kv.Value)
					}
				}
				if e.Reason != "" {
					out = append(out, e)
				}
				return true
			})
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("resolving events:\n%s", strings.Join(errs, "\n"))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Reason != out[j].Reason {
			return out[i].Reason < out[j].Reason
		}
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Source < out[j].Source
	})
	return dedupEvents(out), nil
}

func (u *universe) isEvent(typ ast.Expr, fl *file) bool {
	switch t := typ.(type) {
	case *ast.SelectorExpr:
		x, ok := t.X.(*ast.Ident)
		return ok && t.Sel.Name == "Event" && fl.imports[x.Name] == eventsPath
	case *ast.Ident:
		return t.Name == "Event" && fl.pkg.path == eventsPath
	}
	return false
}

// paramKind names the kind of the involved object when it is (a field-free
// reference to) a parameter of the enclosing function: its type's name
// without the pointer and package.
func paramKind(fn *ast.FuncDecl, expr ast.Expr) string {
	id, ok := expr.(*ast.Ident)
	if !ok {
		return ""
	}
	for _, field := range fn.Type.Params.List {
		for _, name := range field.Names {
			if name.Name != id.Name {
				continue
			}
			t := field.Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			switch tt := t.(type) {
			case *ast.SelectorExpr:
				return kindName(tt.Sel.Name)
			case *ast.Ident:
				return kindName(tt.Name)
			}
		}
	}
	return ""
}

// kindName drops interface types (client.Object, runtime.Object), which
// name no kind.
func kindName(s string) string {
	if s == "Object" {
		return ""
	}
	return s
}

func dedupEvents(in []event) []event {
	var out []event
	for _, e := range in {
		if n := len(out); n > 0 && out[n-1] == e {
			continue
		}
		out = append(out, e)
	}
	return out
}

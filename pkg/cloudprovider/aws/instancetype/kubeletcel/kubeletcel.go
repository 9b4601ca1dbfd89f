package kubeletcel

import (
	"fmt"
	"math"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// Vars are one instance type's values of the expression variables.
type Vars struct {
	VCPUs        int64
	MemoryMiB    int64
	DefaultENIs  int64
	IPsPerENI    int64
	MaxPods      int64
	InstanceType string
}

func (v Vars) activation() map[string]any {
	return map[string]any{
		"vcpus": v.VCPUs, "memory_mib": v.MemoryMiB, "default_enis": v.DefaultENIs,
		"ips_per_eni": v.IPsPerENI, "max_pods": v.MaxPods, "instance_type": v.InstanceType,
	}
}

// maxCachedPrograms bounds the compiled-program cache; classes hold few
// distinct expressions, so reaching it means churn and the cache restarts.
const maxCachedPrograms = 256

// Environment compiles and evaluates kubelet expressions. It is safe for
// concurrent use.
type Environment struct {
	env *cel.Env

	mu       sync.Mutex
	programs map[string]cel.Program
}

// New builds the expression environment.
func New() (*Environment, error) {
	opts := []cel.EnvOption{
		cel.Variable("vcpus", cel.IntType),
		cel.Variable("memory_mib", cel.IntType),
		cel.Variable("default_enis", cel.IntType),
		cel.Variable("ips_per_eni", cel.IntType),
		cel.Variable("max_pods", cel.IntType),
		cel.Variable("instance_type", cel.StringType),
		pick("min", func(a, b float64) bool { return a < b }),
		pick("max", func(a, b float64) bool { return a > b }),
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("building the kubelet expression environment: %w", err)
	}
	return &Environment{env: env, programs: map[string]cel.Program{}}, nil
}

// pick declares name(a, b) over ints and doubles returning the argument
// better says is preferred; mixed arguments return a double.
func pick(name string, better func(a, b float64) bool) cel.EnvOption {
	asDouble := func(v ref.Val) float64 {
		if i, ok := v.(types.Int); ok {
			return float64(i)
		}
		return float64(v.(types.Double))
	}
	choose := func(lhs, rhs ref.Val) ref.Val {
		if better(asDouble(rhs), asDouble(lhs)) {
			return rhs
		}
		return lhs
	}
	double := func(lhs, rhs ref.Val) ref.Val { return types.Double(asDouble(choose(lhs, rhs))) }
	return cel.Function(name,
		cel.Overload(name+"_int_int", []*cel.Type{cel.IntType, cel.IntType}, cel.IntType, cel.BinaryBinding(choose)),
		cel.Overload(name+"_double_double", []*cel.Type{cel.DoubleType, cel.DoubleType}, cel.DoubleType, cel.BinaryBinding(choose)),
		cel.Overload(name+"_int_double", []*cel.Type{cel.IntType, cel.DoubleType}, cel.DoubleType, cel.BinaryBinding(double)),
		cel.Overload(name+"_double_int", []*cel.Type{cel.DoubleType, cel.IntType}, cel.DoubleType, cel.BinaryBinding(double)),
	)
}

// Compile checks that the expression compiles and returns an int or a
// double (upstream's KubeletExpressionInvalid otherwise).
func (e *Environment) Compile(expression string) error {
	_, err := e.program(expression)
	return err
}

func (e *Environment) program(expression string) (cel.Program, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if prg, ok := e.programs[expression]; ok {
		return prg, nil
	}
	ast, issues := e.env.Compile(expression)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("compiling expression %q: %w", expression, issues.Err())
	}
	if out := ast.OutputType(); out != cel.IntType && out != cel.DoubleType {
		return nil, fmt.Errorf("expression %q must return int or double, not %s", expression, out)
	}
	prg, err := e.env.Program(ast)
	if err != nil {
		return nil, fmt.Errorf("creating a program for expression %q: %w", expression, err)
	}
	if len(e.programs) >= maxCachedPrograms {
		clear(e.programs)
	}
	e.programs[expression] = prg
	return prg, nil
}

// Evaluate evaluates the expression for one instance type.
func (e *Environment) Evaluate(expression string, vars Vars) (int64, error) {
	prg, err := e.program(expression)
	if err != nil {
		return 0, err
	}
	out, _, err := prg.Eval(vars.activation())
	if err != nil {
		return 0, fmt.Errorf("evaluating expression %q for %s: %w", expression, vars.InstanceType, err)
	}
	switch v := out.Value().(type) {
	case int64:
		return v, nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, fmt.Errorf("expression %q returned %v for %s", expression, v, vars.InstanceType)
		}
		return int64(v), nil
	default:
		return 0, fmt.Errorf("expression %q returned a %T for %s", expression, out.Value(), vars.InstanceType)
	}
}

// MaxPods evaluates a maxPods expression, refusing a result outside
// [0, MaxInt32].
func (e *Environment) MaxPods(expression string, vars Vars) (int32, error) {
	n, err := e.Evaluate(expression, vars)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("maxPods expression %q evaluated to %d for %s, outside [0, %d]", expression, n, vars.InstanceType, math.MaxInt32)
	}
	return int32(n), nil
}

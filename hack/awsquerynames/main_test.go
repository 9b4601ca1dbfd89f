package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"testing"
)

// checkedIn is the table this command generates, relative to this directory.
const checkedIn = "../../pkg/test/awssim/zz_generated.ec2_names.go"

// TestTableIsCurrent regenerates the checked-in table, for the operations it
// lists, from the SDK version go.mod pins: a stale table (an SDK upgrade, a
// hand edit) fails with the command to run.
func TestTableIsCurrent(t *testing.T) {
	want, err := os.ReadFile(checkedIn)
	if err != nil {
		t.Fatal(err)
	}
	ops := listedOperations(t, want)
	if len(ops) == 0 {
		t.Fatalf("%s lists no operations", checkedIn)
	}
	dir, err := moduleDir(sdkModule)
	if err != nil {
		t.Fatal(err)
	}
	got, err := generate(dir, "awssim", ops)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go generate ./pkg/test/awssim", checkedIn)
	}
}

// TestUnknownOperation: a name the SDK does not have is an error, not an
// empty table entry.
func TestUnknownOperation(t *testing.T) {
	dir, err := moduleDir(sdkModule)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generate(dir, "awssim", []string{"DescribeNothing"}); err == nil {
		t.Fatal("generating for DescribeNothing succeeded, want an error")
	}
}

// listedOperations reads the ec2Operations literal of a generated file.
func listedOperations(t *testing.T, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), checkedIn, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "ec2Operations" {
			return true
		}
		for _, elt := range vs.Values[0].(*ast.CompositeLit).Elts {
			s, err := strconv.Unquote(elt.(*ast.BasicLit).Value)
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, s)
		}
		return false
	})
	return ops
}

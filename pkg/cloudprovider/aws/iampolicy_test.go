package aws

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// sdkPrefix is the import path of the AWS SDK service packages; the last
// element names the IAM action prefix (ec2, ssm, pricing, iam, sqs, sts).
const sdkPrefix = "github.com/aws/aws-sdk-go-v2/service/"

// TestIAMPolicyListsEveryCalledAction keeps docs/aws.md honest: every AWS
// API method declared in a narrowed SDK interface under pkg/ (the only way
// karp calls AWS) must be an action of the controller's IAM policy there.
func TestIAMPolicyListsEveryCalledAction(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	allowed := policyActions(t, filepath.Join(root, "docs", "aws.md"))
	called := calledActions(t, filepath.Join(root, "pkg"))
	if len(called) == 0 {
		t.Fatal("found no narrowed AWS SDK interfaces under pkg/")
	}
	var missing []string
	for action := range called {
		if !allowed[action] {
			missing = append(missing, action+" (declared in "+called[action]+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("docs/aws.md IAM policy lacks %s", m)
	}
	t.Logf("%d AWS actions called, all in the policy", len(called))
}

// policyActions returns the actions of the first ```json block after the
// "## IAM policy" heading.
func policyActions(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "\n## IAM policy")
	if !ok {
		t.Fatalf("%s has no \"## IAM policy\" section", path)
	}
	_, block, ok := strings.Cut(after, "```json\n")
	if !ok {
		t.Fatalf("%s: no ```json block in the IAM policy section", path)
	}
	block, _, _ = strings.Cut(block, "```")
	var policy struct {
		Statement []struct {
			Action json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(block), &policy); err != nil {
		t.Fatalf("%s: the IAM policy is not JSON: %v", path, err)
	}
	out := map[string]bool{}
	for _, s := range policy.Statement {
		var actions []string
		if err := json.Unmarshal(s.Action, &actions); err != nil {
			var one string
			if err := json.Unmarshal(s.Action, &one); err != nil {
				t.Fatalf("%s: Action %s is neither a string nor a list", path, s.Action)
			}
			actions = []string{one}
		}
		for _, a := range actions {
			out[a] = true
		}
	}
	return out
}

// calledActions maps "<service>:<Operation>" to the file declaring it, for
// every interface method shaped like an SDK client call:
// Op(ctx, *<service>.OpInput, ...) outside tests and fakes.
func calledActions(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "fake" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		services := map[string]string{}
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, sdkPrefix) || strings.Contains(strings.TrimPrefix(p, sdkPrefix), "/") {
				continue
			}
			name := filepath.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			services[name] = filepath.Base(p)
		}
		if len(services) == 0 {
			return nil
		}
		ast.Inspect(file, func(n ast.Node) bool {
			iface, ok := n.(*ast.InterfaceType)
			if !ok {
				return true
			}
			for _, m := range iface.Methods.List {
				fn, ok := m.Type.(*ast.FuncType)
				if !ok || len(m.Names) != 1 || fn.Params.NumFields() < 2 {
					continue
				}
				if service, ok := inputService(fn, m.Names[0].Name, services); ok {
					out[iamPrefix(service)+":"+m.Names[0].Name] = path
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// iamPrefix is the IAM action prefix of an SDK service package: its name,
// except where IAM spells the service otherwise.
func iamPrefix(service string) string {
	if service == "arczonalshift" {
		return "arc-zonal-shift"
	}
	return service
}

// inputService returns the service of a method whose second parameter is
// *<service>.<method>Input.
func inputService(fn *ast.FuncType, method string, services map[string]string) (string, bool) {
	var params []ast.Expr
	for _, f := range fn.Params.List {
		for range max(1, len(f.Names)) {
			params = append(params, f.Type)
		}
	}
	star, ok := params[1].(*ast.StarExpr)
	if !ok {
		return "", false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != method+"Input" {
		return "", false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	service, ok := services[pkg.Name]
	return service, ok
}

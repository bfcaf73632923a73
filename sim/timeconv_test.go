package sim

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneFloatToTimeConversion holds the simulator to one checked float →
// Time conversion: outside toTime (timecheck.go), no expression of a
// floating-point type is converted to Time, so that a NaN, an infinity or a
// value past int64 can never become a wrapped, negative time.
func TestOneFloatToTimeConversion(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		src, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, n, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("github.com/headroom-sim/headroom/sim", fset, files, info); err != nil {
		t.Fatalf("type-check: %v", err)
	}
	for _, f := range files {
		var fn string
		ast.Inspect(f, func(n ast.Node) bool {
			if d, ok := n.(*ast.FuncDecl); ok {
				fn = d.Name.Name
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			id, ok := call.Fun.(*ast.Ident)
			if !ok || id.Name != "Time" || !info.Types[call.Fun].IsType() {
				return true
			}
			arg := info.Types[call.Args[0]]
			b, ok := arg.Type.Underlying().(*types.Basic)
			if ok && b.Info()&types.IsFloat != 0 && arg.Value == nil && fn != "toTime" {
				t.Errorf("%s: %s converts a float to Time outside toTime: use toTime or toClock", fset.Position(call.Pos()), fn)
			}
			return true
		})
	}
}

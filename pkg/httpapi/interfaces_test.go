package httpapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// maxMethods bounds the interfaces the HTTP layer declares: each names one
// capability of the store (api.go, Stores), small enough that a fake
// implements what its routes call and nothing else.
const maxMethods = 15

// TestInterfacesAreNarrow keeps every interface of the package within
// maxMethods, embedded interfaces counted as one each.
func TestInterfacesAreNarrow(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if it, ok := spec.Type.(*ast.InterfaceType); ok {
				seen++
				if n := len(it.Methods.List); n > maxMethods {
					t.Errorf("%s: interface %s has %d methods, more than %d: split it by capability", fset.Position(spec.Pos()), spec.Name, n, maxMethods)
				}
			}
			return true
		})
	}
	if seen < 10 {
		t.Errorf("found %d interfaces; the store's capabilities are declared elsewhere than this test looks", seen)
	}
}

package topology

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocsTopologyReference keeps docs/topology.md honest: its complete
// example validates, and every key the loader accepts (the key lists
// given to decoder.fields and groupKeys in this package's source) is
// named in it.
func TestDocsTopologyReference(t *testing.T) {
	doc, err := os.ReadFile("../docs/topology.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("no yaml block in docs/topology.md")
	}
	top, err := Parse("docs/topology.md", blocks[0][1])
	if err != nil {
		t.Fatalf("the complete example does not validate:\n%v", err)
	}
	if top.Proxy.TLS == nil || len(top.Proxy.Auth.Users) == 0 || len(top.Groups) < 3 {
		t.Errorf("the complete example lacks parts: %+v", top.Proxy)
	}
	keys := acceptedKeys(t)
	if len(keys) < 30 {
		t.Fatalf("found only %d accepted keys in the source: %v", len(keys), keys)
	}
	text := string(doc)
	for _, k := range keys {
		if !strings.Contains(text, "`"+k+"`") && !strings.Contains(text, "."+k+"`") && !strings.Contains(text, k+":") {
			t.Errorf("key %q, accepted by the loader, is not described in docs/topology.md", k)
		}
	}
}

// acceptedKeys collects the string arguments after the second of every
// call to fields in this package, and the elements of groupKeys.
func acceptedKeys(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var keys []string
	add := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && !seen[s] {
				seen[s] = true
				keys = append(keys, s)
			}
		}
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "fields" && len(x.Args) > 2 {
					for _, a := range x.Args[2:] {
						add(a)
					}
				}
			case *ast.ValueSpec:
				for i, name := range x.Names {
					if name.Name == "groupKeys" && i < len(x.Values) {
						if cl, ok := x.Values[i].(*ast.CompositeLit); ok {
							for _, e := range cl.Elts {
								add(e)
							}
						}
					}
				}
			}
			return true
		})
	}
	return keys
}

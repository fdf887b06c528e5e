package topology

import (
	"os"
	"slices"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, and that a refused
// file lists its diagnostics in position order.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/design.yaml", "testdata/full.yaml", "testdata/four_problems.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse("fuzz.yaml", data)
		if err == nil {
			return
		}
		ds := err.(*ValidationError).Diagnostics
		if !slices.IsSortedFunc(ds, func(a, b Diagnostic) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Col - b.Col
		}) {
			t.Fatalf("diagnostics out of order: %v", ds)
		}
	})
}

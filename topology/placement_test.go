package topology

import (
	"slices"
	"strings"
	"testing"
)

// TestPlacementParsed: placement, list and lookup_clusters are read into
// the group, list values in their canonical text.
func TestPlacementParsed(t *testing.T) {
	src := header + `  by_tenant:
    index: { column: tenant_id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    placement: lookup
    list: { "007": pg1, "-3": pg0 }
    lookup_clusters: [pg1]
`
	topo, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	g := topo.Group("by_tenant")
	if !g.Lookup() || len(g.List) != 2 || g.List[0].Value != "7" || g.List[1].Value != "-3" || g.ListCluster("7") != "pg1" {
		t.Fatalf("group: %+v %+v", g, g.List)
	}
	if got := g.PlacedClusters(); !slices.Equal(got, []string{"pg1", "pg0"}) {
		t.Fatalf("placed clusters %v", got)
	}
	if got := g.DirectoryClusters(); !slices.Equal(got, []string{"pg0", "pg1"}) {
		t.Fatalf("directory clusters %v", got)
	}
	if topo.Group("main").Lookup() {
		t.Fatal("main is not a lookup group")
	}
}

// TestPlacementRules: each placement mistake is reported at its line and
// column.
func TestPlacementRules(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"unknown placement", `  g:
    index: { column: id, type: bigint, function: xxhash }
    shards: { "-": pg0 }
    placement: directory
`, []string{`10:16: unknown placement "directory" (expected function or lookup)`}},
		{"list values", `  g:
    index: { column: id, type: smallint, function: range }
    shards: [{ cluster: pg0 }]
    list:
      EU: pg1
      "70000": pg1
      "01": pg0
      "1": pg1
      "2": pgz
`, []string{
			`11:7: list value "EU" is not a smallint (the index's type)`,
			`12:7: list value "70000" is not a smallint (the index's type)`,
			`14:7: list value 1 is listed twice (first at line 13)`,
			`15:12: unknown cluster "pgz" (defined: pg0, pg1)`}},
		{"uuid list", `  g:
    index: { column: id, type: uuid, function: xxhash }
    shards: { "-": pg0 }
    list: { "a0eebc99": pg1 }
`, []string{`10:13: list value "a0eebc99" is not a uuid (the index's type)`}},
		{"empty list", `  g:
    index: { column: id, type: text, function: xxhash }
    shards: { "-": pg0 }
    list: {}
`, []string{`10:5: list: needs at least one value (or leave it out)`}},
		{"lookup clusters without lookup", `  g:
    index: { column: id, type: text, function: xxhash }
    shards: { "-": pg0 }
    lookup_clusters: [pg1]
`, []string{`10:5: lookup_clusters: needs placement: lookup (they are the clusters its directory may name besides the shards')`}},
		{"lookup clusters", `  g:
    index: { column: id, type: text, function: xxhash }
    shards: { "-": pg0 }
    placement: lookup
    lookup_clusters: [pg1, pg1, pgq]
`, []string{
			`11:28: cluster pg1 is listed twice in lookup_clusters (first at line 11)`,
			`11:33: unknown cluster "pgq" (defined: pg0, pg1)`}},
		{"unsharded", `  u:
    unsharded: true
    cluster: pg0
    list: { a: pg1 }
`, []string{`10:5: list: is not allowed in an unsharded group`}},
		{"misspelt", `  g:
    index: { column: id, type: text, function: xxhash }
    shards: { "-": pg0 }
    placment: lookup
`, []string{`10:5: unknown key "placment" in group "g" (did you mean "placement"?)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, header+tc.yaml, tc.want)
		})
	}
}

// TestPlacementDiff: a list value that changes cluster is refused while
// the group names tables; a directory change is applied; a lookup
// cluster can be added.
func TestPlacementDiff(t *testing.T) {
	base := header + `  g:
    index: { column: id, type: text, function: xxhash }
    shards: { "-": pg0 }
    placement: lookup
    tables: { t: {} }
`
	old, err := Parse("t.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	edit, err := Parse("t.yaml", []byte(base+"    list: { EU: pg1 }\n    lookup_clusters: [pg1]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range Diff(old, edit).Changes {
		got = append(got, c.Class.String()+": "+c.Message)
	}
	want := []string{
		"refused: group g: list value EU moves from the function's shard to cluster pg1: " + hintMoveData,
		"applied: group g: lookup cluster pg1 added",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	withDir := *old
	withDir.Groups = slices.Clone(old.Groups)
	g := *old.Group("g")
	g.Directory = []*DirectoryEntry{{Key: "acme", Cluster: "pg0"}}
	withDir.Groups[len(withDir.Groups)-1] = &g
	got = nil
	for _, c := range Diff(old, &withDir).Changes {
		got = append(got, c.Class.String()+": "+c.Message)
	}
	if want := []string{"applied: group g: directory acme→pg0 instead of (empty)"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// checkErrors parses src and fails unless its errors are want, each as
// "line:column: message".
func checkErrors(t *testing.T, src string, want []string) {
	t.Helper()
	_, err := Parse("t.yaml", []byte(src))
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	var got []string
	for _, d := range err.(*ValidationError).Errors() {
		got = append(got, strings.TrimPrefix(d.String(), "t.yaml:"))
	}
	if !slices.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

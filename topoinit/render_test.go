package topoinit

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/topology"
)

// TestRenderNames: names that need SQL quotes or YAML quotes, tables
// outside public, and key columns of types an index cannot have.
func TestRenderNames(t *testing.T) {
	s := &Schema{
		Database: "app",
		Tables: []Table{
			{Name: Name{"public", "null"}, Columns: []Column{{"tenant_id", "bigint"}}},
			{Name: Name{"Sales", "Order Items"}, Columns: []Column{{"tenant_id", "bigint"}, {"price_id", "numeric"}}},
			{Name: Name{"public", "tenants"}, Columns: []Column{{"id", "bigint"}}, PrimaryKey: []string{"id"}},
			{Name: Name{"public", "prices"}, Columns: []Column{{"price_id", "numeric"}}},
		},
		Sequences: []Sequence{{Name: Name{"billing", "invoice_no"}}},
	}
	yaml := Render(s, Options{DSN: "postgres://u@h/app"})
	topo, err := topology.Parse("app.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	var got []string
	for _, tb := range topo.Groups[0].Tables {
		got = append(got, tb.QualifiedName.String())
	}
	want := `public."null" "Sales"."Order Items" public.tenants public.prices`
	if strings.Join(got, " ") != want {
		t.Fatalf("tables %v, want %s", got, want)
	}
	if seqs := topo.Groups[0].Sequences; len(seqs) != 1 || seqs[0].String() != "billing.invoice_no" {
		t.Fatalf("sequences %v", seqs)
	}
	if topo.Clusters[0].Name != "pg0" {
		t.Fatalf("cluster %q, want the default pg0", topo.Clusters[0].Name)
	}
	sugs := Suggest(s)
	if len(sugs) != 1 || sugs[0].Group != "by_tenant_id" || len(sugs[0].Members) != 3 || sugs[0].Members[0].Column != "id" {
		t.Fatalf("suggestions %+v: want by_tenant_id over tenants (id), null and \"Sales\".\"Order Items\"; numeric price_id left out", sugs)
	}
	if !strings.Contains(yaml, `#       "\"Sales\".\"Order Items\"": {}`) {
		t.Fatalf("suggestion lines:\n%s", yaml)
	}
}

// TestRenderEmpty: a database without tables still gives a valid file.
func TestRenderEmpty(t *testing.T) {
	yaml := Render(&Schema{Database: "empty"}, Options{Cluster: "db", DSN: "postgres://u@h/empty"})
	if _, err := topology.Parse("empty.yaml", []byte(yaml)); err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	if strings.Contains(yaml, "uggested") {
		t.Fatal("suggestions for an empty database")
	}
}

package topology

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func diagnosticLines(t *testing.T, err error) []string {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v, want *ValidationError", err)
	}
	var out []string
	for _, d := range ve.Diagnostics {
		out = append(out, d.String())
	}
	return out
}

func TestLoadDesignExample(t *testing.T) {
	topo, err := Load("testdata/design.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Warnings) != 0 {
		t.Errorf("warnings: %v", topo.Warnings)
	}
	if topo.Version != 1 || len(topo.Clusters) != 2 || len(topo.Groups) != 3 {
		t.Fatalf("got version %d, %d clusters, %d groups", topo.Version, len(topo.Clusters), len(topo.Groups))
	}
	if c := topo.Cluster("pg1"); c == nil || c.DSN != "postgres://postgres@127.0.0.1:5442/shop" || c.Pos != (Position{4, 3}) {
		t.Errorf("cluster pg1 = %+v", c)
	}
	main := topo.Main()
	if !main.Unsharded || main.Cluster != "pg0" || main.Table(QualifiedName{"public", "settings"}) == nil {
		t.Errorf("main = %+v", main)
	}
	wantSeq := []QualifiedName{{"public", "customers_id_seq"}, {"public", "orders_id_seq"}}
	if !slices.Equal(main.Sequences, wantSeq) {
		t.Errorf("sequences = %v", main.Sequences)
	}

	g := topo.Group("by_customer")
	ix := g.Index
	if ix.Name != "by_customer" || ix.Column != "customer_id" || ix.Expression != nil || ix.Type != TypeBigint || ix.Function != FunctionXXHash {
		t.Errorf("index = %+v", ix)
	}
	if len(g.Shards) != 2 || g.Shards[0].Name != "-80" || g.Shards[0].Start != nil || string(g.Shards[0].End) != "\x80" ||
		g.Shards[1].Name != "80-" || string(g.Shards[1].Start) != "\x80" || g.Shards[1].End != nil || g.Shards[1].Cluster != "pg1" {
		t.Errorf("shards = %+v %+v", g.Shards[0], g.Shards[1])
	}
	if c := g.Table(QualifiedName{"public", "customers"}); c == nil || c.Column != "id" {
		t.Errorf("customers = %+v", c)
	}
	o := g.Table(QualifiedName{"public", "orders"})
	if o == nil || o.Sequence == nil || o.Sequence.Column != "id" || o.Sequence.Name != (QualifiedName{"public", "orders_id_seq"}) {
		t.Errorf("orders = %+v", o)
	}
	if !g.IsReference(QualifiedName{"public", "currencies"}) || g.IsReference(QualifiedName{"public", "orders"}) {
		t.Errorf("reference = %v", g.Reference)
	}
	if len(g.SecondaryIndexes) != 1 {
		t.Fatalf("secondary indexes = %v", g.SecondaryIndexes)
	}
	si := g.SecondaryIndexes[0]
	if si.Name != "orders_by_id" || si.Table != (QualifiedName{"public", "orders"}) || si.Column != "id" || si.Type != TypeBigint || si.State != StateActive {
		t.Errorf("secondary index = %+v", si)
	}

	cat := topo.Group("catalog")
	if cat.Index.Expression == nil || cat.Index.Expression.String() != "lower(sku)" || cat.Index.Column != "" {
		t.Errorf("catalog index = %+v", cat.Index)
	}

	want := ProxyConfig{
		Listen: "127.0.0.1:6432", Auth: AuthConfig{Method: AuthTrust},
		Pool:     PoolConfig{Mode: PoolTransaction, Size: 10, MaxWait: 5 * time.Second},
		Timeouts: TimeoutConfig{Connect: 5 * time.Second, Auth: 10 * time.Second, Shutdown: 30 * time.Second}, Commit: CommitTwoPhase,
	}
	if topo.Proxy.Listen != want.Listen || topo.Proxy.Database != "" || topo.Proxy.Auth.Method != want.Auth.Method || topo.Proxy.TLS != nil ||
		topo.Proxy.Pool != want.Pool || topo.Proxy.Timeouts != want.Timeouts || topo.Proxy.Commit != want.Commit {
		t.Errorf("proxy defaults = %+v", topo.Proxy)
	}
}

func TestLoadFullExample(t *testing.T) {
	topo, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings := []string{"testdata/full.yaml:27:74: warning: function modulo: changing the number of shards moves nearly every row"}
	if fi, err := os.Stat("testdata/full.yaml"); err == nil && fi.Mode().Perm()&0o044 != 0 { // as checked out
		wantWarnings = append([]string{fmt.Sprintf("testdata/full.yaml:2:1: warning: the file holds a password in the clear and is readable by others (mode %04o): chmod 600 it, or take passwords from ${ENV} or password_file:", fi.Mode().Perm())}, wantWarnings...)
	}
	var got []string
	for _, w := range topo.Warnings {
		got = append(got, w.String())
	}
	if !slices.Equal(got, wantWarnings) {
		t.Errorf("warnings = %q", got)
	}
	main := topo.Main()
	if main.Table(QualifiedName{"audit", "log"}) == nil {
		t.Errorf("audit.Log not folded: %v", main.Tables)
	}

	r := topo.Group("by_region")
	var names []string
	for _, s := range r.Shards {
		names = append(names, s.Name+"@"+s.Cluster)
	}
	if !slices.Equal(names, []string{"-0@pg2", "0-100@pg0", "100-@pg1"}) {
		t.Errorf("range shards = %v", names)
	}
	if r.Shards[0].From != nil || *r.Shards[0].To != 0 || *r.Shards[1].From != 0 || *r.Shards[1].To != 100 || r.Shards[2].To != nil {
		t.Errorf("range bounds wrong")
	}
	if r.Table(QualifiedName{"public", "stores"}) == nil || r.Table(QualifiedName{"audit", "events"}).Sequence.Name != (QualifiedName{"audit", "events_id_seq"}) {
		t.Errorf("by_region tables = %v", r.Tables)
	}

	m := topo.Group("by_tenant")
	if len(m.Shards) != 3 || m.Shards[2].Modulo != 2 || m.Shards[2].Name != "2" || m.Shards[2].Cluster != "pg2" {
		t.Errorf("modulo shards = %+v", m.Shards)
	}
	if m.Table(QualifiedName{"public", "invoices"}) == nil {
		t.Errorf("a table with no value must still be a member")
	}

	v := topo.Group("virtual")
	if got := v.Index.Expression.String(); got != "left(lower(btrim(account)), 8) || '/' || region::text" {
		t.Errorf("expression = %s", got)
	}
	if len(v.Shards) != 4 || v.Shards[1].Cluster != "pg0" {
		t.Errorf("virtual shards = %v", v.Shards)
	}

	p := topo.Proxy
	if p.Listen != "0.0.0.0:6432" || p.Database != "shop" || p.Auth.Method != AuthSCRAM || len(p.Auth.Users) != 2 || p.Commit != CommitBestEffort {
		t.Errorf("proxy = %+v", p)
	}
	if u := p.Auth.User("report"); u == nil || u.PasswordKind() != PasswordSCRAM {
		t.Errorf("report user = %+v", u)
	}
	if u := p.Auth.User("app"); u == nil || u.PasswordKind() != PasswordPlain || u.Password != "s3cret" {
		t.Errorf("app user = %+v", u)
	}
	if p.TLS == nil || p.TLS.Cert != "testdata/certs/server.crt" || p.TLS.Key != "/etc/shardgate/server.key" {
		t.Errorf("tls = %+v", p.TLS)
	}
	if p.Pool != (PoolConfig{Mode: PoolSession, Size: 20, MaxWait: 2 * time.Second, IdleTimeout: 10 * time.Minute}) {
		t.Errorf("pool = %+v", p.Pool)
	}
	if p.Timeouts != (TimeoutConfig{Connect: 3 * time.Second, Query: 90 * time.Second, Auth: 20 * time.Second, Shutdown: 45 * time.Second}) {
		t.Errorf("timeouts = %+v", p.Timeouts)
	}
}

// TestFourProblems is the acceptance test for reporting: a gap in key
// ranges, an unknown cluster, a misspelt key and an unsupported function,
// all at once and each at its exact line and column.
func TestFourProblems(t *testing.T) {
	_, err := Load("testdata/four_problems.yaml")
	want := []string{
		`testdata/four_problems.yaml:12:33: unknown key "colum" in index (did you mean "column"?)`,
		`testdata/four_problems.yaml:15:7: key ranges leave a gap between 80 and c0`,
		`testdata/four_problems.yaml:15:14: unknown cluster "pg9" (defined: pg0, pg1)`,
		`testdata/four_problems.yaml:20:47: unsupported function "md5" in index expression (supported: lower, upper, left, right, substr, substring, btrim, trim, casts, ||)`,
	}
	got := diagnosticLines(t, err)
	if !slices.Equal(got, want) {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("Error() = %q", err.Error())
	}
}

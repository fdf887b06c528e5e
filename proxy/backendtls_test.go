package proxy

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TLS to a backend: a cluster serving TLS with a certificate of a test CA
// (made by testenv with crypto/x509), reached with sslmode=verify-full
// and that CA, runs statements over TLS — pooled connections, the
// start-up probe, a two-phase commit across it and a plain cluster. The
// same cluster with another CA fails clearly: 08006 naming the cluster.
func TestBackendTLSVerifyFull(t *testing.T) {
	tenv := testenv.ForTest(t, testenv.Options{N: 2, TLS: []int{1}, Databases: []string{"shop"}})
	if !tenv.Clusters[1].TLS() || tenv.Clusters[0].TLS() {
		t.Fatal("testenv: pg1 must serve TLS, pg0 not")
	}
	groups := `groups:
  main: { unsharded: true, cluster: pg0 }
  by_id:
    index: { column: id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables: { items: {} }
`
	yaml := proxytest.Topology("shop", groups, tenv.Clusters...)
	plain := tenv.Clusters[1].DSN("shop")
	yaml = strings.Replace(yaml, plain, tenv.Clusters[1].TLSDSN("shop", "verify-full"), 1)
	p := startProxy(t, yaml, nil)
	c := connect(t, p.dsn())
	ctx := context.Background()
	mustExec(t, c, "DROP TABLE IF EXISTS items")
	mustExec(t, c, "CREATE TABLE items (id bigint PRIMARY KEY, v text)")
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= 20; id++ { // both shards: a two-phase commit
		if _, err := tx.Exec(ctx, "INSERT INTO items (id, v) VALUES ($1, 'x')", id); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Which of the keys live on pg1, and that its session is encrypted.
	var ssl bool
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n); err != nil || n != 20 {
		t.Fatalf("count = %d, %v", n, err)
	}
	pg1 := connect(t, tenv.Clusters[1].TLSDSN("shop", "verify-full"))
	if err := pg1.QueryRow(ctx, "SELECT bool_and(ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.datname = 'shop' AND a.application_name = ''").Scan(&ssl); err != nil || !ssl {
		t.Fatalf("the proxy's sessions on pg1 are not all over TLS: %v, %v", ssl, err)
	}

	// Another CA: pg1's certificate does not verify.
	dir := t.TempDir()
	wrongCA := filepath.Join(dir, "other-ca.crt")
	writeCert(t, wrongCA, filepath.Join(dir, "other-ca.key"), "another CA")
	wrong := strings.Replace(yaml, url.QueryEscape(tenv.CAFile), url.QueryEscape(wrongCA), 1)
	q := startProxy(t, wrong, nil)
	wc := connect(t, q.dsn())
	if _, err := wc.Exec(ctx, "SELECT * FROM items WHERE id = 1"); err != nil { // pg0 or pg1, whichever: one of the two below fails
		t.Logf("id 1: %v", err)
	}
	_, err = wc.Exec(ctx, "SELECT count(*) FROM items") // every shard
	var pe *pgconn.PgError
	t.Logf("wrong CA: %v", err)
	if !errors.As(err, &pe) || pe.Code != "08006" || !strings.Contains(pe.Message+pe.Detail+pe.Where, "pg1") ||
		!strings.Contains(pe.Message+pe.Detail, "certificate") {
		t.Fatalf("wrong CA: %v (%+v), want 08006 naming pg1 and the certificate", err, pe)
	}
}

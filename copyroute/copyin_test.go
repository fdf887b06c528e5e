package copyroute

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{N: 2, Databases: []string{"shop"}}, func(e *testenv.Env) error {
		env = e
		return nil
	})
}

// fakeClient is the session's side of a COPY: it hands out msgs, then
// io.EOF (the client connection lost), and records what In sends.
type fakeClient struct {
	msgs []pgproto3.FrontendMessage
	sent []byte // message types sent to the client
}

func (c *fakeClient) Receive() (pgproto3.FrontendMessage, error) {
	if len(c.msgs) == 0 {
		return nil, io.EOF
	}
	m := c.msgs[0]
	c.msgs = c.msgs[1:]
	return m, nil
}
func (c *fakeClient) SendRaw(typ byte, _ []byte)                   { c.sent = append(c.sent, typ) }
func (c *fakeClient) Flush() error                                 { return nil }
func (c *fakeClient) ParameterStatus(ps *pgproto3.ParameterStatus) { c.sent = append(c.sent, 'S') }

// copySetup creates table items sharded by id on both clusters and returns
// the plan of sql, its targets and a connection to each target.
func copySetup(t *testing.T, sql string) (*vschema.VSchema, *planner.CopyIn, []planner.Target, []*backend.Conn) {
	t.Helper()
	ctx := context.Background()
	yaml := proxytest.Topology("shop", `groups:
  main:
    unsharded: true
    cluster: pg0
  by_id:
    index: { name: by_id, column: id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables:
      items: {}
`, env.Clusters...)
	vs, err := vschema.Build(proxytest.Parse(t, yaml))
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range env.Clusters {
		if err := cl.Exec(ctx, "shop", "DROP TABLE IF EXISTS items; CREATE TABLE items (id bigint, name text)"); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := planner.New(vs).Plan(sql)
	if err != nil {
		t.Fatal(err)
	}
	ci, ok := plan.Root.(*planner.CopyIn)
	if !ok {
		t.Fatalf("%s: plan root is %T, not a CopyIn", sql, plan.Root)
	}
	targets, err := plan.Targets(nil)
	if err != nil {
		t.Fatal(err)
	}
	var conns []*backend.Conn
	for _, tg := range targets {
		var dsn string
		for _, c := range vs.Clusters() {
			if c.Name == tg.Cluster {
				dsn = c.DSN
			}
		}
		pool := backend.NewPool(tg.Cluster, dsn, 1, 5*time.Second, 5*time.Second, 0)
		b, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pool.Release(b); pool.Close() })
		conns = append(conns, b)
	}
	return vs, ci, targets, conns
}

// clusterIDs reads the ids of items on each cluster directly.
func clusterIDs(t *testing.T) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	for i, cl := range env.Clusters {
		c, err := cl.Conn(context.Background(), "shop")
		if err != nil {
			t.Fatal(err)
		}
		rows, err := c.Query(context.Background(), "SELECT id FROM items")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v int64
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("pg%d", i)] = append(out[fmt.Sprintf("pg%d", i)], v)
		}
		rows.Close()
		_ = c.Close(context.Background())
	}
	return out
}

// TestInRoutesRowsAndLeavesTheTag: every row lands on its key's cluster,
// In returns the total, and the client gets the CopyInResponse but no
// CommandComplete (the caller sends the tag).
func TestInRoutesRowsAndLeavesTheTag(t *testing.T) {
	vs, ci, targets, conns := copySetup(t, "COPY items (name, id) FROM STDIN")
	if len(targets) != 2 {
		t.Fatalf("targets %v, want both clusters", targets)
	}
	var data strings.Builder
	for id := 1; id <= 200; id++ {
		fmt.Fprintf(&data, "n%d\t%d\n", id, id)
	}
	// Split mid-row, so rows cross CopyData messages.
	d := data.String()
	client := &fakeClient{msgs: []pgproto3.FrontendMessage{
		&pgproto3.CopyData{Data: []byte(d[:1001])}, &pgproto3.Sync{},
		&pgproto3.CopyData{Data: []byte(d[1001:])}, &pgproto3.CopyDone{}}}
	n, err := In(ci, "COPY items (name, id) FROM STDIN", "UTF8", targets, conns, client, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != 200 {
		t.Errorf("In returned %d rows, want 200", n)
	}
	if string(client.sent) != "G" {
		t.Errorf("client got message types %q, want only the CopyInResponse", client.sent)
	}
	for _, b := range conns {
		if b.TxStatus != 'I' || b.Broken {
			t.Errorf("cluster %s: tx status %q, broken %v after COPY", b.Cluster(), b.TxStatus, b.Broken)
		}
	}
	g := vs.Group("by_id")
	total := 0
	for cluster, ids := range clusterIDs(t) {
		for _, id := range ids {
			s, err := g.ShardFor(vschema.IntegerKey(id))
			if err != nil {
				t.Fatal(err)
			}
			if s.Cluster != cluster {
				t.Errorf("id %d on %s, its shard is on %s", id, cluster, s.Cluster)
			}
		}
		if len(ids) == 0 {
			t.Errorf("no rows on %s: the keys were not spread", cluster)
		}
		total += len(ids)
	}
	if total != 200 {
		t.Errorf("%d rows on the clusters, want 200", total)
	}
}

// TestInClientLostEndsCopyEverywhere: the client's connection lost after
// some data is 08006, and every cluster is out of COPY mode, ready and
// without the rows.
func TestInClientLostEndsCopyEverywhere(t *testing.T) {
	_, ci, targets, conns := copySetup(t, "COPY items (id, name) FROM STDIN")
	var data strings.Builder
	for id := 1; id <= 50; id++ {
		fmt.Fprintf(&data, "%d\tn%d\n", id, id)
	}
	client := &fakeClient{msgs: []pgproto3.FrontendMessage{&pgproto3.CopyData{Data: []byte(data.String())}}}
	_, err := In(ci, "COPY items (id, name) FROM STDIN", "UTF8", targets, conns, client, nil, nil)
	if sqlerr.Code(err) != "08006" {
		t.Fatalf("err %v (SQLSTATE %q), want 08006", err, sqlerr.Code(err))
	}
	for _, b := range conns {
		if b.TxStatus != 'I' || b.Broken {
			t.Errorf("cluster %s: tx status %q, broken %v after the aborted COPY", b.Cluster(), b.TxStatus, b.Broken)
		}
		if _, err := b.Query("SELECT 1"); err != nil {
			t.Errorf("cluster %s not usable after the aborted COPY: %v", b.Cluster(), err)
		}
	}
	for cluster, ids := range clusterIDs(t) {
		if len(ids) != 0 {
			t.Errorf("%s kept %d rows of the aborted COPY", cluster, len(ids))
		}
	}
}

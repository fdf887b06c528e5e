package routestate

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/sqlerr"
)

// listenOn opens a connection of its own LISTENing on channel.
func listenOn(t *testing.T, dsn, channel string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	if _, err := c.Exec(ctx, "LISTEN "+channel); err != nil {
		t.Fatal(err)
	}
	return c
}

func nextNotification(t *testing.T, c *pgx.Conn, limit time.Duration) *pgconn.Notification {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	n, err := c.WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("no notification within %v: %v", limit, err)
	}
	return n
}

// TestNotificationCarriesTheRevision: Commit's notification carries the
// revision itself, and a follower installs the revision a notification
// carries without reading it from main (this one is not in the table).
func TestNotificationCarriesTheRevision(t *testing.T) {
	dsn, conn := mainDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lis := listenOn(t, dsn, Channel)
	r1, err := Commit(ctx, conn, 0, "alice", "activate", setGSI(GSIActive))
	if err != nil {
		t.Fatal(err)
	}
	var got Revision
	if err := json.Unmarshal([]byte(nextNotification(t, lis, 5*time.Second).Payload), &got); err != nil {
		t.Fatal(err)
	}
	if got.Rev != 1 || got.Author != "alice" || got.Reason != "activate" || !got.CreatedAt.Equal(r1.CreatedAt) || got.State.GSI["orders_by_sku"] != GSIActive {
		t.Fatalf("notified %+v, committed %+v", got, r1)
	}

	f := follow(t, ctx, dsn, parse(t, fileYAML), nil)
	if f.state() != GSIActive {
		t.Fatalf("loaded: %q", f.state())
	}
	got.Rev, got.State.GSI["orders_by_sku"] = 2, GSIBackfilling
	data, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "listening", f.Listening)
	if _, err := conn.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, string(data)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the notified revision installed", func() bool { return f.state() == GSIBackfilling })
	if how := f.Learned(2); how != "listen" {
		t.Fatalf("revision 2 learned by %q", how)
	}
}

// TestCommitOnIsOneRoundTrip: with its statements prepared, CommitOn
// writes a revision, the caller's statements and the notification in one
// batch and nothing else; one over a revision that is no longer the
// latest fails with 40001 and writes nothing, its statements neither.
func TestCommitOnIsOneRoundTrip(t *testing.T) {
	dsn, conn := mainDB(t)
	ctx := context.Background()
	base, err := Load(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE side (rev bigint)"); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	tr := &countTracer{}
	cfg.Tracer = tr
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	const side = "INSERT INTO side VALUES ($1)"
	if err := Prepare(ctx, c, side); err != nil {
		t.Fatal(err)
	}
	lis := listenOn(t, dsn, Channel)
	tr.queries, tr.batches = 0, 0
	also := func(b *pgx.Batch, rev Revision) { b.Queue(side, rev.Rev) }
	r1, err := CommitOn(ctx, c, base, "bob", "one trip", setGSI(GSIActive), also)
	if err != nil || r1.Rev != 1 || r1.CreatedAt.IsZero() || r1.State.GSI["orders_by_sku"] != GSIActive {
		t.Fatalf("CommitOn: %+v %v", r1, err)
	}
	if tr.queries != 0 || tr.batches != 1 {
		t.Errorf("CommitOn sent %d queries and %d batches, want one batch", tr.queries, tr.batches)
	}
	if n := nextNotification(t, lis, 5*time.Second); n.Payload[0] != '{' {
		t.Errorf("notified %q", n.Payload)
	}
	if _, err := CommitOn(ctx, c, base, "carol", "stale", setGSI(GSIBackfilling), also); sqlerr.Code(err) != sqlerr.SerializationFailure {
		t.Fatalf("CommitOn over a stale revision: %v", err)
	}
	var sides int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM side").Scan(&sides); err != nil || sides != 1 {
		t.Fatalf("%d rows of the caller's statements (%v), want the first CommitOn's", sides, err)
	}
	got, err := Load(ctx, conn)
	if err != nil || got.Rev != 1 || got.Author != "bob" || got.State.GSI["orders_by_sku"] != GSIActive {
		t.Fatalf("after the stale CommitOn: %+v %v", got, err)
	}
}

// countTracer counts the queries and batches a connection sends.
type countTracer struct{ queries, batches int }

func (c *countTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries++
	return ctx
}

func (c *countTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *countTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.batches++
	return ctx
}

func (c *countTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *countTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestAcknowledgementIsNotified: a proxy that arms for a buffer request
// notifies AckChannel with its id as its heartbeat reports the
// acknowledgement, once: its later heartbeats do not.
func TestAcknowledgementIsNotified(t *testing.T) {
	dsn, conn := mainDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gate := NewGate()
	f := follow(t, ctx, dsn, parse(t, fileYAML), gate)
	lis := listenOn(t, dsn, AckChannel)
	req := &BufferRequest{ID: "wf1-7", Tables: []string{"public.orders"}, Deadline: time.Now().Add(10 * time.Second)}
	if _, err := Commit(ctx, conn, 0, "t", "buffer", func(s *State) error { s.Buffer = req; return nil }); err != nil {
		t.Fatal(err)
	}
	if n := nextNotification(t, lis, 5*time.Second); n.Payload != f.ID {
		t.Fatalf("notified %q, want the proxy's id %q", n.Payload, f.ID)
	}
	ps, err := Proxies(ctx, conn)
	if err != nil || len(ps) != 1 || ps[0].Acked[req.ID].IsZero() {
		t.Fatalf("proxies after the notification: %+v %v", ps, err)
	}
	c, stop := context.WithTimeout(ctx, 2*Beat+Beat/2)
	defer stop()
	if n, err := lis.WaitForNotification(c); err == nil {
		t.Fatalf("notified again by a later heartbeat: %q", n.Payload)
	}
}

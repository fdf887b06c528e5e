package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/pgwire"
)

// bulkQuery's answer has rows of every size (some larger than the read
// buffers) and a notice among them; with %s true, rows then an error.
const bulkQuery = "SELECT bulk_noisy(g, %s) AS n, repeat('x', CASE WHEN g %% 400 = 0 THEN 50000 ELSE g %% 90 END) AS s FROM generate_series(1, 2000) g"

const noisyFunc = `CREATE OR REPLACE FUNCTION bulk_noisy(i int, fail bool) RETURNS int AS $$
BEGIN IF i = 500 THEN RAISE NOTICE 'half way'; END IF; IF i > 1990 AND fail THEN RAISE division_by_zero; END IF; RETURN i; END $$ LANGUAGE plpgsql`

// countingClient is the session's client with its calls counted; plain
// hides SendRun, so that the relay passes every message on by itself.
type countingClient struct {
	merge.WireClient
	raw, runs int
}

func (c *countingClient) SendRaw(typ byte, body []byte) { c.raw++; c.WireClient.SendRaw(typ, body) }
func (c *countingClient) SendRun(msgs []byte)           { c.runs++; c.WireClient.SendRun(msgs) }

type rawOnlyClient struct{ merge.Client }

// TestRelayPassesRowsInRuns: a single backend's answer reaches the client
// in runs of messages, byte for byte what relaying each message gives;
// few messages are passed on one by one (the description, ReadyForQuery's
// neighbours, rows cut by the end of a read).
func TestRelayPassesRowsInRuns(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	b, err := p.srv.cur.Load().pools["pg0"].Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if err := b.SimpleExec(noisyFunc, nil); err != nil {
		t.Fatal(err)
	}
	q := fmt.Sprintf(bulkQuery, "false")
	relay := func(bulk bool) ([]byte, *countingClient) {
		var out bytes.Buffer
		w := bufio.NewWriterSize(&out, 32*1024)
		cc := &countingClient{WireClient: merge.WireClient{Enc: &pgwire.Encoder{}, Out: w}}
		cc.Enc.Reset(w)
		var c merge.Client = cc
		if !bulk {
			c = rawOnlyClient{cc}
		}
		rl := merge.NewRelay(c, false, []*backend.Conn{b})
		if err := merge.SendQuery(b, q); err != nil {
			t.Fatal(err)
		}
		rl.ReadQuery(b, nil, func() error { return fmt.Errorf("no COPY here") })
		if err := rl.Finish(); err != nil {
			t.Fatal(err)
		}
		_ = w.Flush()
		return out.Bytes(), cc
	}
	want, plain := relay(false)
	got, cc := relay(true)
	if !bytes.Equal(got, want) {
		t.Fatalf("relayed in runs: %d bytes, per message: %d", len(got), len(want))
	}
	if plain.runs != 0 || plain.raw < 2002 {
		t.Fatalf("per message: %d messages, %d runs", plain.raw, plain.runs)
	}
	if cc.runs == 0 || cc.raw > 50 {
		t.Fatalf("bulk: %d runs and %d messages one by one, want the 2,000 rows mostly in runs", cc.runs, cc.raw)
	}
	t.Logf("2003 messages: %d runs, %d one by one", cc.runs, cc.raw)
}

// TestBulkRelayAnswers compares answers through the proxy with the
// backend's own over both protocols: rows of every size with a notice
// among them, rows then an error, COPY TO.
func TestBulkRelayAnswers(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	ctx := context.Background()
	direct, err := pgx.Connect(ctx, env.Clusters[0].DSN("shop"))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	proxied := connect(t, p.dsn())
	mustExec(t, direct, noisyFunc) // the main group's cluster
	answer := func(c *pgx.Conn, q string, mode pgx.QueryExecMode) (string, error) {
		rows, err := c.Query(ctx, q, mode)
		if err != nil {
			return "", err
		}
		var sum, n int
		for rows.Next() {
			var i int
			var s string
			if err := rows.Scan(&i, &s); err != nil {
				return "", err
			}
			sum, n = sum+i*len(s), n+1
		}
		rows.Close()
		return fmt.Sprintf("%d rows, %d, %s", n, sum, rows.CommandTag()), rows.Err()
	}
	for _, fail := range []string{"false", "true"} {
		q := fmt.Sprintf(bulkQuery, fail)
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeCacheDescribe} {
			want, wantErr := answer(direct, q, mode)
			got, gotErr := answer(proxied, q, mode)
			if got != want || sqlstate(gotErr) != sqlstate(wantErr) {
				t.Fatalf("fail=%s mode %v: proxy %q %v, direct %q %v", fail, mode, got, gotErr, want, wantErr)
			}
			if fail == "true" && sqlstate(gotErr) != "22012" {
				t.Fatalf("mode %v: %v, want 22012", mode, gotErr)
			}
		}
	}
	copyOut := func(c *pgx.Conn) string {
		var buf bytes.Buffer
		if _, err := c.PgConn().CopyTo(ctx, &buf, "COPY (SELECT g, repeat('y', g % 300) FROM generate_series(1, 5000) g) TO STDOUT"); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	if got, want := copyOut(proxied), copyOut(direct); got != want {
		t.Fatalf("COPY TO through the proxy: %d bytes, direct %d", len(got), len(want))
	}
}

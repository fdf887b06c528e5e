package proxy

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// A client that pauses between Parse and Describe meets its
// statement_timeout where Postgres puts it: the backend has the Parse as
// soon as the client sent it, so the Describe fails with 57014 and the
// statement stays prepared.
func TestExtStatementTimeoutBetweenParseAndDescribe(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1 })
	r := dialRaw(t, p.addr)
	r.login(t)
	r.sendAll(t, &pgproto3.Query{String: "SET statement_timeout = '100ms'"})
	r.until(t, 'Z')
	r.sendAll(t, &pgproto3.Parse{Name: "t", Query: "SELECT $1::varchar"})
	time.Sleep(250 * time.Millisecond)
	r.sendAll(t, &pgproto3.Describe{ObjectType: 'S', Name: "t"}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "1E[57014]Z" {
		t.Fatalf("Parse, pause, Describe: %s, want ParseComplete then 57014", got)
	}
	r.sendAll(t, &pgproto3.Query{String: "SET statement_timeout = 0"})
	r.until(t, 'Z')
	r.sendAll(t, &pgproto3.Describe{ObjectType: 'S', Name: "t"}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "tTZ" {
		t.Fatalf("Describe once the timeout is off: %s", got)
	}
}

// preparedOnBackend counts the statements prepared on the backend
// connection that serves r (pools of one connection).
func preparedOnBackend(t *testing.T, r *rawConn) string {
	t.Helper()
	r.sendAll(t, &pgproto3.Parse{Query: "SELECT count(*) FROM pg_prepared_statements"},
		&pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	n := ""
	for {
		m, err := r.fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *pgproto3.DataRow:
			n = string(m.Values[0])
		case *pgproto3.ErrorResponse:
			t.Fatalf("counting statements: %s", m.Message)
		case *pgproto3.ReadyForQuery:
			return n
		}
	}
}

// A statement the client closes (Close, DEALLOCATE, or by disconnecting)
// is closed on the backend connections it was prepared on, the next time
// they are used.
func TestExtClosedStatementsDeallocated(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1 })
	r := dialRaw(t, p.addr)
	r.login(t)
	var ms, closes []pgproto3.FrontendMessage
	for i := 0; i < 5; i++ {
		name := fmt.Sprint("s", i)
		ms = append(ms, &pgproto3.Parse{Name: name, Query: fmt.Sprintf("SELECT %d", i)},
			&pgproto3.Bind{PreparedStatement: name}, &pgproto3.Execute{})
		closes = append(closes, &pgproto3.Close{ObjectType: 'S', Name: name})
	}
	r.sendAll(t, append(ms, &pgproto3.Sync{})...)
	r.until(t, 'Z')
	if n := preparedOnBackend(t, r); n != "5" {
		t.Fatalf("%s statements on the backend after 5 Parses", n)
	}
	r.sendAll(t, append(closes, &pgproto3.Sync{})...)
	if got := r.until(t, 'Z'); got != "33333Z" {
		t.Fatalf("Close: %s", got)
	}
	if n := preparedOnBackend(t, r); n != "0" {
		t.Fatalf("%s statements left on the backend after the client closed them all", n)
	}

	// SQL DEALLOCATE and a client that leaves: the same.
	r.sendAll(t, &pgproto3.Query{String: "PREPARE q AS SELECT 1"})
	r.until(t, 'Z')
	r.sendAll(t, &pgproto3.Query{String: "EXECUTE q"})
	r.until(t, 'Z')
	r.sendAll(t, &pgproto3.Parse{Name: "kept", Query: "SELECT 2"}, &pgproto3.Bind{PreparedStatement: "kept"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	r.until(t, 'Z')
	if n := preparedOnBackend(t, r); n != "2" {
		t.Fatalf("%s statements on the backend, want 2", n)
	}
	r.sendAll(t, &pgproto3.Query{String: "DEALLOCATE q"})
	r.until(t, 'Z')
	if n := preparedOnBackend(t, r); n != "1" {
		t.Fatalf("%s statements on the backend after DEALLOCATE, want 1", n)
	}
	r.sendAll(t, &pgproto3.Terminate{})
	r.Close()
	// The session forgets its statements when its goroutine sees the
	// client go (cleanup): wait for that before counting.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		p.srv.mu.Lock()
		n := len(p.srv.sessions)
		p.srv.mu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			break
		}
	}
	r2 := dialRaw(t, p.addr)
	r2.login(t)
	if n := preparedOnBackend(t, r2); n != "0" {
		t.Fatalf("%s statements on the backend after their client left, want 0", n)
	}
}

// DISCARD ALL resets what the session has (settings, prepared statements,
// cursors) as in Postgres; DISCARD PLANS, TEMP and SEQUENCES leave it be.
func TestDiscardAllAndOthers(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 2 })
	c := setupShop(t, p)
	id := customerOn(t, p, env.Clusters[1].Name)
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES (1, $1, 1)", id)
	for _, sql := range []string{"SET application_name = 'kept'", "PREPARE q AS SELECT 7",
		"DISCARD PLANS", "DISCARD SEQUENCES", "DISCARD TEMP"} {
		if _, err := simpleRows(t, c, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if got, err := simpleRows(t, c, "SHOW application_name"); err != nil || fmt.Sprint(got) != "[kept]" {
		t.Fatalf("after DISCARD PLANS/SEQUENCES/TEMP: application_name %v %v", got, err)
	}
	if got, err := simpleRows(t, c, "EXECUTE q"); err != nil || fmt.Sprint(got) != "[7]" {
		t.Fatalf("after DISCARD PLANS: EXECUTE q %v %v", got, err)
	}
	for _, sql := range []string{"BEGIN", fmt.Sprintf("DECLARE held CURSOR WITH HOLD FOR SELECT id FROM orders WHERE customer_id = %d", id), "COMMIT", "DISCARD ALL"} {
		if _, err := simpleRows(t, c, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if got, err := simpleRows(t, c, "SHOW application_name"); err != nil || fmt.Sprint(got) == "[kept]" {
		t.Fatalf("application_name after DISCARD ALL: %v %v, want it reset", got, err)
	}
	if _, err := simpleRows(t, c, "EXECUTE q"); sqlstate(err) != "26000" {
		t.Fatalf("EXECUTE after DISCARD ALL: %v, want 26000", err)
	}
	if _, err := simpleRows(t, c, "FETCH 1 FROM held"); sqlstate(err) != "34000" {
		t.Fatalf("FETCH after DISCARD ALL: %v, want 34000", err)
	}
}

// A transaction that ends in the middle of an extended-protocol batch
// (BEGIN, ..., COMMIT, more statements, Sync) gives its connections back
// at the COMMIT: the rest of the batch runs on connections it leases anew,
// never on one that another client may have been lent meanwhile.
func TestExtCommitMidBatchReleasesOnce(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1; c.MaxWait = 5 * time.Second })
	a := dialRaw(t, p.addr)
	a.login(t)
	step := func(sql string) []pgproto3.FrontendMessage {
		return []pgproto3.FrontendMessage{&pgproto3.Parse{Query: sql}, &pgproto3.Bind{}, &pgproto3.Execute{}}
	}
	var ms []pgproto3.FrontendMessage
	for _, sql := range []string{"BEGIN", "SELECT 1", "COMMIT", "SELECT pg_sleep(0.4)", "SELECT 2"} {
		ms = append(ms, step(sql)...)
	}
	a.sendAll(t, append(ms, &pgproto3.Sync{})...)
	time.Sleep(150 * time.Millisecond) // A is in its pg_sleep, after the COMMIT
	b := dialRaw(t, p.addr)
	b.login(t)
	b.sendAll(t, append(step("SELECT 3"), &pgproto3.Sync{})...)
	if got := a.until(t, 'Z'); got != "12C12DC12C12DC12DCZ" {
		t.Fatalf("client A: %s", got)
	}
	if got := b.until(t, 'Z'); got != "12DCZ" {
		t.Fatalf("client B: %s", got)
	}
	for i := 0; i < 3; i++ {
		for _, r := range []*rawConn{a, b} {
			r.sendAll(t, append(step("SELECT 4"), &pgproto3.Sync{})...)
			if got := r.until(t, 'Z'); got != "12DCZ" {
				t.Fatalf("afterwards: %s", got)
			}
		}
	}
	if n := poolStats(p.srv)[env.Clusters[0].Name][0]; n > 1 {
		t.Fatalf("%d connections open, pool size 1", n)
	}
}

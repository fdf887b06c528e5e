package workflows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/sqlerr"
)

// TestTransientErrors: lost connections and terminated backends are
// retried; errors of the workflow's own making are not.
func TestTransientErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{fmt.Errorf("source s0: %w", &pgconn.PgError{Code: "08006"}), true},
		{fmt.Errorf("source s0: receive: %w", io.ErrUnexpectedEOF), true},
		{&net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)}, true},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{fmt.Errorf("target t1: %w", &pgconn.PgError{Code: "42703", Message: `column "note" does not exist`}), false},
		{&pgconn.PgError{Code: "23505"}, false},
		{refused("workflow 1 was cancelled"), false},
		{errStopped, false},
		{fmt.Errorf("x: %w", context.Canceled), false},
		{errors.New("something else"), false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	var waits []string
	for a := 1; a <= 8; a++ {
		waits = append(waits, backoff(a).String())
	}
	if got := strings.Join(waits, " "); got != "1s 2s 4s 8s 16s 32s 1m0s 1m0s" {
		t.Errorf("backoff: %s", got)
	}
}

// TestRunnerRetriesAKilledWalsender: the walsender of a workflow's stream
// is terminated (57P01) under a write load; the runner says so in status
// ("retrying (attempt 1, next in …)"), takes the stream up again by
// itself, never goes to phase error, and VDiff is clean.
func TestRunnerRetriesAKilledWalsender(t *testing.T) {
	defer func(b time.Duration) { retryBase = b }(retryBase)
	retryBase = 2 * time.Second
	f, store, ctx, id := createdMoveTables(t, 1000)
	l := startLoad(f, "main", "orders", 1001)
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	time.Sleep(300 * time.Millisecond)
	var killed bool
	if err := f.conn("main").QueryRow(ctx, `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL`,
		slotName(id, "main")).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate the walsender: %v %v", killed, err)
	}
	var text string
	waitUntil(t, "the retry in status", func() bool {
		st, err := store.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Phase == PhaseError {
			t.Fatalf("the workflow went to error:\n%s", st.Text())
		}
		text = st.Text()
		return st.Retry != nil
	})
	if !strings.Contains(text, "retrying (attempt 1, next in ") || !strings.Contains(text, "57P01") {
		t.Fatalf("status during the retry:\n%s", text)
	}
	t.Logf("%s", text)
	waitUntil(t, "the stream taken up again", func() bool {
		st, err := store.Status(ctx, id)
		return err == nil && st.Retry == nil && st.Phase == PhaseStreaming
	})
	time.Sleep(300 * time.Millisecond)
	l.finish(t)
	waitCaughtUp(t, f, rn, "main")
	checkClean(t, store, id)
	if err := rn.failed.Load(); err != nil {
		t.Fatalf("runner: %v", *err)
	}
}

// TestBackgroundTakesUpRetryableErrors: a workflow whose runner ended on
// an error still transient is runnable for `serve --workflows`; one that
// ended on a permanent error waits for `workflow start`.
func TestBackgroundTakesUpRetryableErrors(t *testing.T) {
	_, store, ctx, id := createdMoveTables(t, 10)
	for _, c := range []struct {
		err      error
		runnable bool
	}{
		{fmt.Errorf("record the retry: %w", &pgconn.PgError{Code: "57P01"}), true},
		{&pgconn.PgError{Code: "42703"}, false},
	} {
		if err := store.setError(ctx, id, c.err); err != nil {
			t.Fatal(err)
		}
		ids, err := store.runnable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(ids) == 1 && ids[0] == id; got != c.runnable {
			t.Errorf("after %v: runnable %v, want %v", c.err, ids, c.runnable)
		}
	}
}

// createdMoveTables creates the workflow of moveTablesFixture.
func createdMoveTables(t *testing.T, rows int) (*fixture, *Store, context.Context, int64) {
	t.Helper()
	f, spec := moveTablesFixture(t, rows)
	store := f.store()
	ctx := testCtx(t)
	id, _, err := Create(ctx, store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	return f, store, ctx, id
}

// TestRunnerRidesOutAClusterRestart: the server holding the source, the
// targets and main (the workflow's records and lock) is restarted while
// the workflow streams under a write load; the runner retries until it is
// back, takes its lock again, goes on streaming by itself (never phase
// error), and VDiff is clean.
func TestRunnerRidesOutAClusterRestart(t *testing.T) {
	defer func(b time.Duration) { retryBase = b }(retryBase)
	retryBase = 500 * time.Millisecond
	env := testenv.ForTest(t, testenv.Options{N: 1})
	f, spec := moveTablesFixtureOn(newFixtureOn(t, env, "main", "t0", "t1"), 1000)
	store := f.store()
	ctx := testCtx(t)
	id, _, err := Create(ctx, store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	var retries atomic.Int32
	rn := startRun(t, store, id, func(r *Runner) {
		r.Logf = func(format string, args ...any) {
			if line := fmt.Sprintf(format, args...); strings.Contains(line, "; retrying in ") {
				retries.Add(1)
				t.Log(line)
			}
		}
	})
	waitPhase(t, store, rn, id, PhaseStreaming)

	// A write load that reconnects: a write refused during the restart
	// is simply not acknowledged (VDiff compares what the source holds).
	var acked atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var c *pgx.Conn
		for i := 1001; ; i++ {
			select {
			case <-stop:
				if c != nil {
					c.Close(context.Background())
				}
				return
			default:
			}
			if c == nil || c.IsClosed() {
				if c, err = pgx.Connect(ctx, f.dsn("main")); err != nil {
					c = nil
					time.Sleep(50 * time.Millisecond)
					continue
				}
			}
			if _, err := c.Exec(ctx, "INSERT INTO orders (id, customer_id, note) VALUES ($1, $2, 'new')", i, i%1000); err == nil {
				acked.Add(1)
			}
			if _, err := c.Exec(ctx, "UPDATE orders SET note = note || '+' WHERE id = $1", 1+i%1000); err == nil {
				acked.Add(1)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	time.Sleep(500 * time.Millisecond)
	pg := env.Clusters[0]
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the stream taken up again", func() bool {
		st, err := store.Status(ctx, id)
		if err == nil && st.Phase == PhaseError {
			t.Fatalf("the workflow went to error:\n%s", st.Text())
		}
		return err == nil && st.Retry == nil && st.Phase == PhaseStreaming && st.Runner.Reporting
	})
	if retries.Load() == 0 {
		t.Fatal("the runner did not retry")
	}
	// The runner holds its lock again (the restart released it).
	if _, err := store.Lock(ctx, id); !errors.Is(err, ErrLocked) && sqlerr.Code(err) != sqlerr.LockNotAvailable {
		t.Fatalf("the workflow's lock after the restart: %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	<-done
	t.Logf("write load: %d statements acknowledged", acked.Load())
	waitCaughtUp(t, f, rn, "main")
	checkClean(t, store, id)
	if err := rn.failed.Load(); err != nil {
		t.Fatalf("runner: %v", *err)
	}
	if w, _ := store.Get(ctx, id); w.Phase != PhaseStreaming {
		t.Fatalf("phase %s: %s", w.Phase, w.Error)
	}
}

package testenv

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestStandby starts a synchronous standby and one that applies commits a
// second late, and checks both stream, answer reads, refuse writes as a
// standby does, and that WaitReplay waits for the delayed one.
func TestStandby(t *testing.T) {
	t.Parallel()
	if skipRequested() {
		t.Skip(SkipEnv + "=1")
	}
	ctx := testCtx(t)
	env, err := Start(ctx, Options{N: 1, Databases: []string{"shop"}, Log: tbWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	pg0 := env.Clusters[0]
	if err := pg0.Exec(ctx, "shop", "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}
	sync, err := pg0.StartStandby(ctx, StandbyOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	delayed, err := pg0.StartStandby(ctx, StandbyOptions{ApplyDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if sync.Primary != pg0 || sync.Port == pg0.Port || delayed.Port == sync.Port {
		t.Fatalf("standbys: %+v %+v", sync, delayed)
	}
	var state string
	if err := pg0.queryRow(ctx, "SELECT sync_state FROM pg_stat_replication WHERE application_name = $1", []any{sync.Name}, &state); err != nil || state != "sync" {
		t.Fatalf("sync standby's sync_state = %q, %v", state, err)
	}
	if err := pg0.Exec(ctx, "shop", "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	// A synchronous commit was flushed by the standby; replayed soon after.
	if err := sync.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := sync.Conn(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	var rec bool
	if err := conn.QueryRow(ctx, "SELECT count(*), pg_is_in_recovery() FROM t").Scan(&n, &rec); err != nil || n != 1 || !rec {
		t.Fatalf("on the standby: count %d, in recovery %v, %v", n, rec, err)
	}
	_, err = conn.Exec(ctx, "INSERT INTO t VALUES (2)")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "25006" {
		t.Fatalf("write on a standby: %v, want 25006", err)
	}
	t0 := time.Now()
	if err := pg0.Exec(ctx, "shop", "INSERT INTO t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	if err := delayed.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 900*time.Millisecond {
		t.Fatalf("the delayed standby replayed after %s, want about 1s", d)
	}
	if err := delayed.queryRow(ctx, "SELECT 1", nil, &n); err != nil {
		t.Fatal(err)
	}
	// Stop stops the standbys too (checked by the ports coming free).
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	if !eventually(5*time.Second, func() bool { return portFree(sync.Port) && portFree(delayed.Port) }) {
		t.Fatal("standbys still listening after Stop")
	}
}

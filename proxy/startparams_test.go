package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A client that connects while main's pool is exhausted connects at once
// (start-up needs no pooled backend: the ParameterStatus set is cached)
// and waits only at its first statement, which runs once a connection is
// free; with start-up settings not seen before, it reports its own values.
// Before, start-up waited for a connection and failed with FATAL 53300
// after pool.max_wait.
func TestStartupWithBusyPool(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1; c.MaxWait = 3 * time.Second })
	setupShop(t, p).Close(context.Background()) // start-up parameters seen once
	ctx := context.Background()
	holder := connect(t, p.dsn())
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM settings"); err != nil { // main's one connection, held
		t.Fatal(err)
	}
	for name, dsn := range map[string]string{
		"settings seen before": p.dsn(),
		"new settings":         p.dsn() + "&application_name=newcomer&DateStyle=German",
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			c, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatalf("connect while the pool is busy: %v", err)
			}
			defer c.Close(ctx)
			if d := time.Since(start); d > 2*time.Second { // max_wait is 3 s
				t.Fatalf("start-up took %v with the pool busy", d)
			}
			if name == "new settings" {
				if got := c.PgConn().ParameterStatus("application_name"); got != "newcomer" {
					t.Fatalf("application_name reported %q", got)
				}
			}
			// The first statement waits for main's connection.
			done := make(chan error, 1)
			go func() {
				var s string
				done <- c.QueryRow(ctx, "SELECT current_setting('application_name') FROM settings UNION ALL SELECT current_setting('application_name')").Scan(&s)
			}()
			select {
			case err := <-done:
				t.Fatalf("first statement ran while the pool was busy: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("first statement once the pool is free: %v", err)
			}
			if tx, err = holder.Begin(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "SELECT count(*) FROM settings"); err != nil {
				t.Fatal(err)
			}
		})
	}
	_ = tx.Rollback(ctx)
}

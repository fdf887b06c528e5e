package proxy

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// The intermediate-results limit stops streaming reads too: a cursor
// declared over intermediate results (in a transaction block, and WITH
// HOLD outside one) and an Execute with a row limit fail with 54000 naming
// the limit, and the session carries on (TestIntermediateLimits covers
// plain reads).
func TestIntermediateLimitStreamingReads(t *testing.T) {
	ctx := context.Background()
	p, c := startInter(t, "max_bytes: 64")
	_, err := c.Exec(ctx, "BEGIN")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PgConn().Exec(ctx, "DECLARE c SCROLL CURSOR FOR "+imJoin).ReadAll()
	wantLimit(t, "DECLARE in a transaction block", err, "max_bytes")
	if _, err := simpleRows(t, c, "SELECT 1"); sqlstate(err) != "25P02" {
		t.Fatalf("after the error in the transaction block: want 25P02, got %v", err)
	}
	mustExec(t, c, "ROLLBACK")
	checkCarriesOn(t, p, c, "DECLARE in a transaction block")

	_, err = c.PgConn().Exec(ctx, "DECLARE h CURSOR WITH HOLD FOR "+imJoin).ReadAll()
	wantLimit(t, "DECLARE WITH HOLD", err, "max_bytes")
	checkCarriesOn(t, p, c, "DECLARE WITH HOLD")

	r := dialRaw(t, p.addr)
	r.login(t)
	r.sendAll(t, &pgproto3.Parse{Query: imJoin}, &pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 7}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); !strings.Contains(got, "E[54000]") || strings.Contains(got, "D") {
		t.Fatalf("Execute with a row limit: got %q, want 54000 and no rows", got)
	}
	r.query(t, "SELECT count(*) FROM customers")
	waitClean(t, p, "Execute with a row limit")
	checkCarriesOn(t, p, c, "Execute with a row limit")
}

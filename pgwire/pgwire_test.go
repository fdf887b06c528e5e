package pgwire

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/sqlerr"
)

func TestSplitTag(t *testing.T) {
	for _, c := range []struct {
		body   string
		prefix string
		n      int64
		ok     bool
	}{
		{"INSERT 0 5\x00", "INSERT 0", 5, true},
		{"COPY 3", "COPY", 3, true},
		{"BEGIN\x00", "BEGIN", 0, false},
		{"CREATE TABLE\x00", "CREATE TABLE", 0, false},
	} {
		prefix, n, ok := SplitTag([]byte(c.body))
		if prefix != c.prefix || n != c.n || ok != c.ok {
			t.Errorf("SplitTag(%q) = %q %d %v", c.body, prefix, n, ok)
		}
	}
}

func TestParseOptions(t *testing.T) {
	got := ParseOptions("-c search_path=a,b -cwork_mem=64MB --statement-timeout=5s junk")
	want := map[string]string{"search_path": "a,b", "work_mem": "64MB", "statement_timeout": "5s"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseOptions = %v, want %v", got, want)
	}
}

func TestParseDataRow(t *testing.T) {
	body := []byte{0, 3, 0, 0, 0, 2, 'h', 'i', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	row, err := ParseDataRow(body)
	if err != nil || len(row) != 3 || string(row[0]) != "hi" || row[1] != nil || row[2] == nil || len(row[2]) != 0 {
		t.Fatalf("ParseDataRow = %q, %v", row, err)
	}
	body[6] = 'X' // the row is a copy
	if string(row[0]) != "hi" {
		t.Fatal("ParseDataRow aliases its input")
	}
	if _, err := ParseDataRow(body[:8]); !errors.Is(err, ErrMalformedDataRow) {
		t.Fatalf("short DataRow: %v", err)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{"work_mem": "work_mem", "plan.x": "plan.x", "Mixed": `"Mixed"`, `a"b`: `"a""b"`, "1st": `"1st"`, "": `""`} {
		if got := QuoteIdent(in); got != want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", in, got, want)
		}
	}
	if got := QuoteLiteral("it's"); got != "'it''s'" {
		t.Errorf("QuoteLiteral = %s", got)
	}
}

func TestErrorResponse(t *testing.T) {
	be := &BackendError{Cluster: "pg1", Shards: []string{"80-"}}
	be.Resp.Severity, be.Resp.Code, be.Resp.Message, be.Resp.Where = "ERROR", "23505", "duplicate", "SQL function f"
	r := ErrorResponse(fmt.Errorf("wrapped: %w", be), "ERROR")
	if r.Code != "23505" || r.Where != "SQL function f\nshardgate: cluster pg1, shard 80-" {
		t.Errorf("backend error: %+v", r)
	}
	if be.Resp.Where != "SQL function f" {
		t.Error("ErrorResponse changed the backend error")
	}
	if r := ErrorResponse(sqlerr.New("0A000", "no"), "FATAL"); r.Code != "0A000" || r.Severity != "FATAL" || r.Message != "no" {
		t.Errorf("sqlerr: %+v", r)
	}
	if r := ErrorResponse(&pgconn.PgError{Severity: "ERROR", Code: "42P01", Message: "no table"}, "ERROR"); r.Code != "42P01" {
		t.Errorf("PgError: %+v", r)
	}
	if r := ErrorResponse(errors.New("boom"), "ERROR"); r.Code != "XX000" {
		t.Errorf("plain error: %+v", r)
	}
	if ErrCode(be) != "23505" || ErrMessage(be) != "duplicate" {
		t.Errorf("ErrCode/ErrMessage of a backend error: %s %s", ErrCode(be), ErrMessage(be))
	}
}

// TestBoolResult: text and binary bools, the column named.
func TestBoolResult(t *testing.T) {
	desc, row := BoolResult("pg_cancel_backend", nil, true)
	if string(desc.Fields[0].Name) != "pg_cancel_backend" || desc.Fields[0].DataTypeOID != 16 || desc.Fields[0].Format != 0 || string(row.Values[0]) != "t" {
		t.Fatalf("text true: %+v %q", desc.Fields[0], row.Values)
	}
	desc, row = BoolResult("x", []int16{1}, false)
	if desc.Fields[0].Format != 1 || len(row.Values[0]) != 1 || row.Values[0][0] != 0 {
		t.Fatalf("binary false: %+v %v", desc.Fields[0], row.Values)
	}
	if _, row = BoolResult("x", []int16{1}, true); row.Values[0][0] != 1 {
		t.Fatalf("binary true: %v", row.Values)
	}
	if _, row = BoolResult("x", []int16{0}, false); string(row.Values[0]) != "f" {
		t.Fatalf("text false: %q", row.Values)
	}
}

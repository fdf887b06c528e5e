package planner

import (
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

// TestSignalValues evaluates the pid and timeout of planned signal calls
// for Bind values in text and binary, NULL, and a negative timeout.
func TestSignalValues(t *testing.T) {
	p := testPlanner(t)
	pl, err := p.Plan("SELECT pg_terminate_backend($1, $2)")
	if err != nil || pl.Signal == nil {
		t.Fatalf("plan: %v, signal %v", err, pl.Signal)
	}
	bin := Param{Value: []byte{0, 0, 0x30, 0x39}, Binary: true, OID: 23}
	pid, null, timeout, err := pl.Signal.Values([]Param{bin, {Value: []byte("250")}})
	if err != nil || null || pid != 12345 || timeout != 250 {
		t.Fatalf("binary pid: %d %v %d %v", pid, null, timeout, err)
	}
	if _, null, _, err := pl.Signal.Values([]Param{{Null: true}, {Value: []byte("1")}}); err != nil || !null {
		t.Fatalf("NULL pid: null=%v err=%v", null, err)
	}
	_, _, _, err = pl.Signal.Values([]Param{{Value: []byte("12")}, {Value: []byte("-1")}})
	if sqlerr.Code(err) != "22023" {
		t.Fatalf("negative timeout: %v, want 22023", err)
	}
	pl, err = p.Plan("SELECT pg_cancel_backend(77)")
	if err != nil || pl.Signal == nil || pl.Signal.Terminate() {
		t.Fatalf("cancel plan: %v %+v", err, pl.Signal)
	}
	if pid, _, _, err := pl.Signal.Values(nil); err != nil || pid != 77 {
		t.Fatalf("literal pid: %d %v", pid, err)
	}
}

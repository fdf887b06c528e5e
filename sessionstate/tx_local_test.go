package sessionstate

import "testing"

// TestWithLocal: the transaction's SET LOCAL values (as the planner writes
// them) override the session's, newest first, and ROLLBACK TO drops them.
func TestWithLocal(t *testing.T) {
	s := Settings{"extra_float_digits": "'1'", "bytea_output": "'hex'"}
	var r TxReplay
	if got := s.WithLocal(&r, "extra_float_digits"); got["extra_float_digits"] != "'1'" {
		t.Errorf("no SET LOCAL: %v", got)
	}
	r.Local("SET LOCAL extra_float_digits TO -5")
	r.Savepoint("a")
	r.Local("SET LOCAL extra_float_digits TO 0", "SET LOCAL statement_timeout TO '5s'")
	got := s.WithLocal(&r, "extra_float_digits", "bytea_output")
	if got.ExtraFloatDigits(1) != 0 || got["bytea_output"] != "'hex'" {
		t.Errorf("after two SET LOCAL: %v", got)
	}
	if s["extra_float_digits"] != "'1'" {
		t.Errorf("the session's settings changed: %v", s)
	}
	r.RollbackTo("a")
	if got := s.WithLocal(&r, "extra_float_digits"); got.ExtraFloatDigits(1) != -5 {
		t.Errorf("after ROLLBACK TO: %v", got)
	}
	if got := s.WithLocal(nil, "extra_float_digits"); got.ExtraFloatDigits(1) != 1 {
		t.Errorf("outside a transaction: %v", got)
	}
}

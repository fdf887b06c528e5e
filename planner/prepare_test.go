package planner

import (
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

// SQL EXECUTE's constants reach the parameters as Postgres's assignment
// casts convert them.
func TestPreparedBind(t *testing.T) {
	p := testPlanner(t)
	pl, err := p.Plan("EXECUTE q(7.5, 1e3, 7.50, 'x', NULL, -0.0, 1.5, 7)")
	if err != nil {
		t.Fatal(err)
	}
	oids := []uint32{oidInt8, oidInt4, oidText, oidInt8, oidInt4, oidText, oidFloat8, 0}
	got, err := pl.Prepared.Bind(oids)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"8", "1000", "7.50", "x", "NULL", "0.0", "1.5", "7"}
	for i, p := range got {
		v := string(p.Value)
		if p.Null {
			v = "NULL"
		}
		if v != want[i] || p.OID != oids[i] {
			t.Errorf("arg %d: %q (oid %d), want %q (oid %d)", i+1, v, p.OID, want[i], oids[i])
		}
	}
	for _, c := range []struct {
		sql  string
		oids []uint32
		code string
		msg  string
	}{
		{"EXECUTE q(1)", []uint32{oidBool}, "42804", "parameter $1 of type integer cannot be coerced to the expected type boolean"},
		{"EXECUTE q(true)", []uint32{oidInt4}, "42804", "parameter $1 of type boolean cannot be coerced to the expected type integer"},
		{"EXECUTE q(40000)", []uint32{oidInt2}, sqlerr.NumericValueOutOfRange, "smallint out of range"},
		{"EXECUTE q(1, 2)", []uint32{oidInt4}, sqlerr.SyntaxError, `wrong number of parameters for prepared statement "q"`},
	} {
		pl, err := p.Plan(c.sql)
		if err != nil {
			t.Fatal(err)
		}
		_, err = pl.Prepared.Bind(c.oids)
		if e, ok := sqlerr.As(err); !ok || e.Code != c.code || e.Message != c.msg {
			t.Errorf("%s: %v, want %s %s", c.sql, err, c.code, c.msg)
		}
	}
}

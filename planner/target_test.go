package planner

import (
	"reflect"
	"testing"
)

// TestTargetParamOIDs: a rewritten target's parameter types are the
// original's at its Params, unspecified past them; unchanged without.
func TestTargetParamOIDs(t *testing.T) {
	oids := []uint32{23, 25}
	if got := (Target{}).ParamOIDs(oids); !reflect.DeepEqual(got, oids) {
		t.Fatalf("no Params: %v", got)
	}
	if got := (Target{Params: []int{1, 0, 2}}).ParamOIDs(oids); !reflect.DeepEqual(got, []uint32{25, 23, 0}) {
		t.Fatalf("subset: %v", got)
	}
}

// TestWritesData: reads and cursors do not write; COPY TO does not, COPY
// FROM does.
func TestWritesData(t *testing.T) {
	p := testPlanner(t)
	for sql, want := range map[string]bool{
		"SELECT 1":                      false,
		"DECLARE c CURSOR FOR SELECT 1": false,
		"COPY (SELECT 1) TO STDOUT":     false,
		"CREATE TABLE x (a int)":        true,
	} {
		pl, err := p.Plan(sql)
		if err != nil {
			t.Fatal(err)
		}
		if pl.WritesData() != want {
			t.Errorf("%s: WritesData %v, want %v", sql, !want, want)
		}
	}
}

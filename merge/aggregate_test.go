package merge

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/shardgate/shardgate/pgvalue"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// partials is a rowSource of shard rows.
type partials struct{ rows [][][]byte }

func (p *partials) next() ([][]byte, error) {
	if len(p.rows) == 0 {
		return nil, nil
	}
	r := p.rows[0]
	p.rows = p.rows[1:]
	return r, nil
}

// avgRow is one shard's partial of avg(x) of double precision: sum(x)
// and count(x), binary.
func avgRow(sum float64, count int64) [][]byte {
	s := binary.BigEndian.AppendUint64(nil, math.Float64bits(sum))
	c := binary.BigEndian.AppendUint64(nil, uint64(count))
	return [][]byte{s, c}
}

// avg(double precision) over shards whose rows are far apart overflows
// the sum of squared deviations Postgres keeps beside the sum: 22003, as
// one Postgres fails it (SELECT avg(score) FROM customers WHERE id IN
// (-42, 2), score 1e300 on one shard and a small value on another), where
// the sums alone give a finite average. A NaN or infinite sum stops the
// check, as in float8_accum.
func TestAvgFloat8SquaresOverflow(t *testing.T) {
	binCol := func(oid uint32) colInfo {
		return colInfo{field: pgproto3.FieldDescription{DataTypeOID: oid, Format: 1}, typ: pgvalue.TypeOf(oid), st: &pgvalue.Styles{}}
	}
	for _, tc := range []struct {
		name     string
		rows     [][][]byte
		overflow bool
	}{
		{"far apart", [][][]byte{avgRow(1e300, 1), avgRow(2.5, 3)}, true},
		{"far apart, one shard each way", [][][]byte{avgRow(-3, 2), avgRow(-1e200, 1)}, true},
		{"close", [][][]byte{avgRow(1e150, 1), avgRow(2.5, 3)}, false},
		{"one shard", [][][]byte{avgRow(1e300, 2)}, false},
		{"an infinite sum", [][][]byte{avgRow(1e300, 1), avgRow(2.5, 3), avgRow(math.Inf(1), 1)}, false},
		{"a NaN sum", [][][]byte{avgRow(math.NaN(), 1), avgRow(1e300, 1), avgRow(2.5, 3)}, false},
		{"an empty shard", [][][]byte{avgRow(1e300, 1), {nil, binary.BigEndian.AppendUint64(nil, 0)}}, false},
	} {
		spec := aggSpec{AggSpec: planner.AggSpec{Func: planner.AggAvg, Col: 0, Count: 1, Distinct: -1},
			part: binCol(pgtype.Float8OID), count: binCol(pgtype.Int8OID), result: pgtype.Float8OID}
		a := &aggSource{plan: &planner.Aggregate{Scalar: true}, in: &partials{rows: tc.rows}, groups: map[string]*aggGroup{},
			specs: []aggSpec{spec}}
		if err := a.consume(); err != nil {
			t.Fatalf("%s: consume: %v", tc.name, err)
		}
		err := a.overflowed()
		if got := err != nil; got != tc.overflow {
			t.Errorf("%s: overflow error %v, want one: %v", tc.name, err, tc.overflow)
		}
		if err != nil && sqlerr.Code(err) != sqlerr.NumericValueOutOfRange {
			t.Errorf("%s: SQLSTATE %s, want 22003", tc.name, sqlerr.Code(err))
		}
	}
}

package merge

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shardgate/shardgate/pgvalue"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// The Aggregate stage combines the shards' partial aggregates group by
// group, in the types the shards return them (count and sum(int) as bigint,
// sum(bigint) and sum(numeric) as numeric, ...), and computes avg from sum
// and count with the backend's arithmetic: numeric division with
// select_div_scale's scale, float8 division. The result columns are named
// and typed as one Postgres names and types them.

// aggSource is a running Aggregate.
type aggSource struct {
	e       *Exec
	plan    *planner.Aggregate
	in      rowSource
	inCols  []colInfo
	outCols []colInfo
	group   []sortCol
	specs   []aggSpec
	// post are the outputs computed by expressions (nil elsewhere).
	post   []*postNode
	groups map[string]*aggGroup
	order  []*aggGroup
	done   bool
	pos    int
	efd    int
}

// aggSpec is a planner.AggSpec with its columns resolved.
type aggSpec struct {
	planner.AggSpec
	part  colInfo // the partial (avg: its sum)
	count colInfo // avg: the count
	// square is the variances' sum of squares; distinct the argument of
	// a DISTINCT aggregate.
	square   colInfo
	distinct colInfo
	// result is the type of the combined value.
	result uint32
}

type aggGroup struct {
	first [][]byte // the group's first shard row: values the group determines
	accs  []aggAcc
	out   [][]byte
}

// aggAcc accumulates one aggregate of one group.
type aggAcc struct {
	has   bool
	i     int64           // count, bigint sum, bool
	n     pgvalue.Decimal // numeric sum (avg of integers too: no overflow)
	f     float64         // float sums
	cnt   int64           // avg: rows counted
	best  []byte          // min/max: the raw value
	bestV pgvalue.Value
	iv    pgvalue.Interval // interval sum
	sq    pgvalue.Decimal  // variances: the sum of squares
	// squares: a float8 avg's sum of squared deviations overflowed in
	// combining the shards' partials (avgSquares).
	squares bool
	// seen are the values of a DISTINCT aggregate's argument added.
	seen map[string]struct{}
}

func (e *Exec) newAggregate(p *planner.Aggregate, in rowSource, cols []colInfo) (*aggSource, error) {
	a := &aggSource{e: e, plan: p, in: in, inCols: cols, groups: map[string]*aggGroup{}, efd: e.FloatDigits}
	if len(cols) != p.ShardColumns {
		return nil, sqlerr.New(sqlerr.InternalError, "shard statement returned %d columns, the merge expects %d", len(cols), p.ShardColumns)
	}
	for i, c := range p.Group {
		if i < len(p.AliasGroup) && p.AliasGroup[i] >= 0 && cols[c].field.DataTypeOID == planner.ScopeTypeOID {
			// GROUP BY an alias that is no input column: the shards
			// grouped by the output column.
			c = p.AliasGroup[i]
		}
		col, err := e.equalityColumn(c, cols, len(cols), "GROUP BY")
		if err != nil {
			return nil, err
		}
		a.group = append(a.group, col)
	}
	for _, s := range p.Aggs {
		spec, err := e.aggSpec(s, cols)
		if err != nil {
			return nil, err
		}
		a.specs = append(a.specs, spec)
	}
	nvis := len(p.Outputs) - p.Hidden
	a.post = make([]*postNode, len(p.Outputs))
	for k, o := range p.Outputs {
		if o.Expr != nil {
			n, err := a.resolve(o.Expr)
			if err != nil {
				return nil, err
			}
			a.post[k] = n
			format := int16(1)
			if k < nvis {
				format = e.clientFormat(k)
			}
			var name []byte
			if k < nvis {
				name = cols[k].field.Name
			}
			a.outCols = append(a.outCols, colInfo{field: n.field(name, format), typ: pgvalue.TypeOf(n.oid), st: e.styles})
			continue
		}
		if o.Agg < 0 {
			a.outCols = append(a.outCols, cols[o.Col])
			continue
		}
		spec := a.specs[o.Agg]
		f := spec.part.field
		f.TableOID, f.TableAttributeNumber = 0, 0
		switch spec.Func {
		case planner.AggMin, planner.AggMax:
			// The shard's own bytes, in the format it sent them.
		case planner.AggAvg, planner.AggVarSamp, planner.AggVarPop, planner.AggStddevSamp, planner.AggStddevPop:
			f.DataTypeOID, f.TypeModifier = spec.result, -1
			f.DataTypeSize = -1
			if spec.result == pgtype.Float8OID {
				f.DataTypeSize = 8
			}
			f.Format = 1
		default:
			f.Format = 1
		}
		if k < nvis && spec.Func != planner.AggMin && spec.Func != planner.AggMax {
			f.Format = e.clientFormat(k)
		}
		a.outCols = append(a.outCols, colInfo{field: f, typ: pgvalue.TypeOf(f.DataTypeOID), st: e.styles})
	}
	return a, nil
}

// aggSpec checks that the proxy can combine an aggregate of the partial
// type the shards return.
func (e *Exec) aggSpec(s planner.AggSpec, cols []colInfo) (aggSpec, error) {
	if s.Col >= len(cols) || s.Count >= len(cols) {
		return aggSpec{}, sqlerr.New(sqlerr.InternalError, "aggregate column out of range")
	}
	spec := aggSpec{AggSpec: s, part: cols[s.Col]}
	if err := spec.part.readable(); err != nil {
		return spec, err
	}
	if s.Distinct >= len(cols) || s.Func.Variance() && (s.Square >= len(cols) || s.Count < 0) {
		return aggSpec{}, sqlerr.New(sqlerr.InternalError, "aggregate column out of range")
	}
	if s.Distinct >= 0 {
		spec.distinct = cols[s.Distinct]
		if spec.distinct.typ == nil {
			return spec, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard %s over a value of type %s is not supported", s.Expr, pgvalue.TypeName(spec.distinct.field.DataTypeOID))
		}
		if err := spec.distinct.readable(); err != nil {
			return spec, err
		}
	}
	oid := spec.part.field.DataTypeOID
	refuse := func() error {
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard %s of type %s is not supported", s.Expr, pgvalue.TypeName(oid))
	}
	switch s.Func {
	case planner.AggCount:
		if oid != pgtype.Int8OID {
			return spec, refuse()
		}
		spec.result = pgtype.Int8OID
	case planner.AggSum:
		switch oid {
		case pgtype.Int8OID, pgtype.NumericOID, pgtype.Float4OID, pgtype.Float8OID, pgtype.IntervalOID:
		default:
			return spec, refuse()
		}
		spec.result = oid
	case planner.AggMin, planner.AggMax:
		if spec.part.typ == nil {
			return spec, refuse()
		}
		if err := e.checkOrdering(spec.part.typ, s.Collation, s.Expr); err != nil {
			return spec, err
		}
		spec.result = oid
	case planner.AggAvg:
		spec.count = cols[s.Count]
		switch oid {
		case pgtype.Int8OID, pgtype.NumericOID:
			spec.result = pgtype.NumericOID
		case pgtype.Float8OID:
			spec.result = pgtype.Float8OID
		case pgtype.Float4OID:
			// avg(real) accumulates in double precision, sum(real) in
			// real: the shards' sums would lose digits.
			return spec, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard %s of type real is not supported", s.Expr).
				WithHint("Cast the argument to double precision: avg(x::float8).")
		default:
			return spec, refuse()
		}
		if spec.count.field.DataTypeOID != pgtype.Int8OID {
			return spec, refuse()
		}
	case planner.AggVarSamp, planner.AggVarPop, planner.AggStddevSamp, planner.AggStddevPop:
		spec.count, spec.square = cols[s.Count], cols[s.Square]
		if oid != pgtype.NumericOID || spec.square.field.DataTypeOID != pgtype.NumericOID || spec.count.field.DataTypeOID != pgtype.Int8OID {
			return spec, refuse()
		}
		spec.result = pgtype.NumericOID
	case planner.AggBoolAnd, planner.AggBoolOr:
		if oid != pgtype.BoolOID {
			return spec, refuse()
		}
		spec.result = pgtype.BoolOID
	case planner.AggBitAnd, planner.AggBitOr:
		switch oid {
		case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		default:
			return spec, refuse() // bit and bit varying
		}
		spec.result = oid
	default:
		return spec, refuse()
	}
	return spec, nil
}

func (a *aggSource) next() ([][]byte, error) {
	if !a.done {
		a.done = true
		if err := a.consume(); err != nil {
			return nil, err
		}
		if err := a.overflowed(); err != nil {
			return nil, err
		}
		if a.plan.Scalar && len(a.order) == 0 {
			a.order = append(a.order, &aggGroup{accs: make([]aggAcc, len(a.specs))})
		}
	}
	for a.pos < len(a.order) {
		g := a.order[a.pos]
		a.pos++
		keep, err := a.finalize(g)
		if err != nil {
			return nil, err
		}
		if keep {
			return g.out, nil
		}
	}
	return nil, nil
}

// consume reads every shard row into its group.
func (a *aggSource) consume() error {
	var key []byte
	for {
		row, err := a.in.next()
		if err != nil {
			return err
		}
		if row == nil {
			return nil
		}
		key, err = rowKey(key[:0], row, a.group)
		if err != nil {
			return err
		}
		g := a.groups[string(key)]
		if g == nil {
			g = &aggGroup{first: row, accs: make([]aggAcc, len(a.specs))}
			a.groups[string(key)] = g
			a.order = append(a.order, g)
		}
		for i := range a.specs {
			if err := a.add(&a.specs[i], &g.accs[i], row); err != nil {
				return err
			}
		}
	}
}

var errBigintRange = sqlerr.New(sqlerr.NumericValueOutOfRange, "bigint out of range")

func floatOverflow() error {
	return sqlerr.New(sqlerr.NumericValueOutOfRange, "value out of range: overflow")
}

// add folds one shard's partial into the accumulator.
func (a *aggSource) add(s *aggSpec, acc *aggAcc, row [][]byte) error {
	raw := row[s.Col]
	if raw == nil {
		return nil
	}
	v, err := s.part.decode(raw)
	if err != nil {
		return err
	}
	if s.Distinct >= 0 {
		// Each value of the argument once: a shard's partial for a value
		// it filtered out (count 0, sum NULL) does not count as seen.
		if s.Func == planner.AggCount && v.I == 0 {
			return nil
		}
		x, err := s.distinct.decode(row[s.Distinct])
		if err != nil {
			return err
		}
		key := string(pgvalue.AppendKey(nil, s.distinct.typ.Kind, x))
		if _, dup := acc.seen[key]; dup {
			return nil
		}
		if acc.seen == nil {
			acc.seen = map[string]struct{}{}
		}
		acc.seen[key] = struct{}{}
	}
	switch s.Func {
	case planner.AggVarSamp, planner.AggVarPop, planner.AggStddevSamp, planner.AggStddevPop:
		c, err := s.count.decode(row[s.Count])
		if err != nil {
			return err
		}
		q, err := s.square.decode(row[s.Square])
		if err != nil {
			return err
		}
		if !acc.has {
			acc.n, acc.sq = v.N, q.N
		} else {
			acc.n, acc.sq = acc.n.Add(v.N), acc.sq.Add(q.N)
		}
		acc.cnt += c.I
		acc.has = true
	case planner.AggCount:
		r := acc.i + v.I
		if (r > acc.i) != (v.I > 0) {
			return errBigintRange
		}
		acc.i, acc.has = r, true
	case planner.AggSum, planner.AggAvg:
		switch s.part.field.DataTypeOID {
		case pgtype.Int8OID:
			if s.Func == planner.AggAvg {
				if !acc.has {
					acc.n = pgvalue.DecimalFromInt(0)
				}
				acc.n = acc.n.Add(pgvalue.DecimalFromInt(v.I))
				break
			}
			r := acc.i + v.I
			if (r > acc.i) != (v.I > 0) {
				return errBigintRange
			}
			acc.i = r
		case pgtype.NumericOID:
			if !acc.has {
				acc.n = v.N
			} else {
				acc.n = acc.n.Add(v.N)
			}
		case pgtype.Float4OID:
			r := float64(float32(acc.f) + float32(v.F))
			if math.IsInf(r, 0) && !math.IsInf(acc.f, 0) && !math.IsInf(v.F, 0) {
				return floatOverflow()
			}
			acc.f = r
		case pgtype.Float8OID:
			r := acc.f + v.F
			if math.IsInf(r, 0) && !math.IsInf(acc.f, 0) && !math.IsInf(v.F, 0) {
				return floatOverflow()
			}
			if s.Func == planner.AggAvg {
				if err := a.avgSquares(s, acc, v.F, row); err != nil {
					return err
				}
			}
			acc.f = r
		case pgtype.IntervalOID:
			r, err := acc.iv.Add(pgvalue.IntervalOf(v))
			if err != nil {
				return err
			}
			acc.iv = r
		}
		acc.has = true
		if s.Func == planner.AggAvg {
			c, err := s.count.decode(row[s.Count])
			if err != nil {
				return err
			}
			acc.cnt += c.I
		}
	case planner.AggMin, planner.AggMax:
		if acc.has {
			c := pgvalue.Compare(s.part.typ.Kind, v, acc.bestV)
			if s.Func == planner.AggMin && c >= 0 || s.Func == planner.AggMax && c <= 0 {
				return nil
			}
		}
		acc.best, acc.bestV, acc.has = raw, v, true
	case planner.AggBoolAnd:
		if !acc.has {
			acc.i = 1
		}
		acc.i &= v.I
		acc.has = true
	case planner.AggBoolOr, planner.AggBitOr:
		acc.i |= v.I
		acc.has = true
	case planner.AggBitAnd:
		if !acc.has {
			acc.i = v.I
		}
		acc.i &= v.I
		acc.has = true
	}
	return nil
}

// avgSquares checks a shard's float8 avg partial (sum sx over its rows)
// against the ones added before as float8_combine does: avg(double
// precision) keeps a sum of squared deviations beside the sum, and
// Postgres fails with 22003 when adding rows makes it overflow (values far
// apart, past about 1e154), where the sums alone give a finite answer. It
// stops checking once the sum is NaN or infinite (as float8_accum does),
// so the overflow counts only if the final sum is finite (overflowed).
// acc.cnt is still the count before this shard's.
func (a *aggSource) avgSquares(s *aggSpec, acc *aggAcc, sx float64, row [][]byte) error {
	if !acc.has || acc.cnt == 0 {
		return nil
	}
	c, err := s.count.decode(row[s.Count])
	if err != nil || c.I == 0 {
		return err
	}
	n1, n2 := float64(acc.cnt), float64(c.I)
	tmp := acc.f/n1 - sx/n2
	if math.IsInf(n1*n2*tmp*tmp/(n1+n2), 0) {
		acc.squares = true
	}
	return nil
}

// overflowed reports a float8 avg whose sum of squares overflowed in
// combining the shards' partials and whose sum is finite: Postgres fails
// it with 22003 (value out of range: overflow).
func (a *aggSource) overflowed() error {
	for _, g := range a.order {
		for i := range g.accs {
			acc := &g.accs[i]
			if acc.squares && !math.IsInf(acc.f, 0) && !math.IsNaN(acc.f) {
				return floatOverflow()
			}
		}
	}
	return nil
}

// result is the combined value of one aggregate (null when no shard had
// one), decoded: HAVING compares it, the output encodes it.
func (a *aggSource) result(s *aggSpec, acc *aggAcc) pgvalue.Value {
	switch s.Func {
	case planner.AggCount:
		return pgvalue.Value{I: acc.i}
	case planner.AggMin, planner.AggMax:
		if !acc.has {
			return pgvalue.Value{Null: true}
		}
		return acc.bestV
	case planner.AggVarSamp, planner.AggVarPop, planner.AggStddevSamp, planner.AggStddevPop:
		sample := s.Func == planner.AggVarSamp || s.Func == planner.AggStddevSamp
		stddev := s.Func == planner.AggStddevSamp || s.Func == planner.AggStddevPop
		d, null := pgvalue.VarianceFromSums(acc.cnt, acc.n, acc.sq, sample, stddev)
		return pgvalue.Value{N: d, Null: null}
	case planner.AggAvg:
		if acc.cnt == 0 {
			return pgvalue.Value{Null: true}
		}
		if s.result == pgtype.Float8OID {
			return pgvalue.Value{F: acc.f / float64(acc.cnt)}
		}
		return pgvalue.Value{N: acc.n.Div(pgvalue.DecimalFromInt(acc.cnt))}
	}
	if !acc.has {
		return pgvalue.Value{Null: true}
	}
	if s.result == pgtype.IntervalOID {
		return acc.iv.Value()
	}
	return pgvalue.Value{I: acc.i, N: acc.n, F: acc.f}
}

// encode writes a combined value in a column's format.
func (a *aggSource) encode(oid uint32, format int16, v pgvalue.Value) []byte {
	if v.Null {
		return nil
	}
	if format == 1 {
		switch oid {
		case pgtype.Int8OID:
			return binary.BigEndian.AppendUint64(nil, uint64(v.I))
		case pgtype.Int4OID:
			return binary.BigEndian.AppendUint32(nil, uint32(v.I))
		case pgtype.Int2OID:
			return binary.BigEndian.AppendUint16(nil, uint16(v.I))
		case pgtype.NumericOID:
			return v.N.AppendBinary(nil)
		case pgtype.Float4OID:
			return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(v.F)))
		case pgtype.Float8OID:
			return binary.BigEndian.AppendUint64(nil, math.Float64bits(v.F))
		case pgtype.BoolOID:
			return []byte{byte(v.I)}
		case pgtype.IntervalOID:
			return v.B
		}
		return nil
	}
	switch oid {
	case pgtype.Int8OID, pgtype.Int4OID, pgtype.Int2OID:
		return strconv.AppendInt(nil, v.I, 10)
	case pgtype.NumericOID:
		return v.N.AppendText(nil)
	case pgtype.Float4OID:
		return pgvalue.AppendFloat4Text(nil, float32(v.F), a.efd)
	case pgtype.Float8OID:
		return pgvalue.AppendFloat8Text(nil, v.F, a.efd)
	case pgtype.BoolOID:
		if v.I != 0 {
			return []byte("t")
		}
		return []byte("f")
	case pgtype.IntervalOID:
		return pgvalue.IntervalOf(v).AppendStyle(nil, a.e.styles.Interval())
	}
	return nil
}

// finalize computes a group's output row and reports whether HAVING keeps
// it.
func (a *aggSource) finalize(g *aggGroup) (bool, error) {
	results := make([]pgvalue.Value, len(a.specs))
	for i := range a.specs {
		results[i] = a.result(&a.specs[i], &g.accs[i])
	}
	if a.plan.Having != nil {
		t, err := a.eval(a.plan.Having, g, results)
		if err != nil {
			return false, err
		}
		if t != truthTrue {
			return false, nil
		}
	}
	g.out = make([][]byte, len(a.plan.Outputs))
	for k, o := range a.plan.Outputs {
		if n := a.post[k]; n != nil {
			v, err := a.evalPost(n, g, results)
			if err != nil {
				return false, err
			}
			c := a.outCols[k].field
			g.out[k] = a.encode(c.DataTypeOID, c.Format, v)
			continue
		}
		if o.Agg < 0 {
			g.out[k] = g.first[o.Col]
			continue
		}
		s := &a.specs[o.Agg]
		if s.Func == planner.AggMin || s.Func == planner.AggMax {
			g.out[k] = g.accs[o.Agg].best
			continue
		}
		c := a.outCols[k].field
		g.out[k] = a.encode(c.DataTypeOID, c.Format, results[o.Agg])
	}
	g.accs = nil
	return true, nil
}

package merge

import (
	"math"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shardgate/shardgate/pgvalue"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// Expressions over combined aggregates (planner.PostExpr), evaluated per
// group with Postgres's types and arithmetic: integer operators of the
// wider operand's type with overflow checks (22003), numeric exactly (the
// scales of numeric.c), float8 and float4 in IEEE arithmetic with float.c's
// overflow and underflow checks, division by zero as 22012; round of
// numeric half away from zero, of float8 half to even; the casts between
// these types as Postgres's cast functions do them. The result type (and
// typmod) is the one Postgres's parser gives the expression.

// postNode is a PostExpr with its types resolved.
type postNode struct {
	x      *planner.PostExpr
	oid    uint32
	typmod int32
	args   []*postNode
	konst  pgvalue.Value // PostConst
}

// numeric types in the order of their implicit casts: a mixed operation
// runs in the later type.
var numericRank = map[uint32]int{pgtype.Int2OID: 1, pgtype.Int4OID: 2, pgtype.Int8OID: 3, pgtype.NumericOID: 4, pgtype.Float4OID: 5, pgtype.Float8OID: 6}

var castOIDs = map[string]uint32{"int2": pgtype.Int2OID, "int4": pgtype.Int4OID, "int8": pgtype.Int8OID,
	"numeric": pgtype.NumericOID, "float4": pgtype.Float4OID, "float8": pgtype.Float8OID}

func isNumeric(oid uint32) bool { return numericRank[oid] > 0 }

func isInt(oid uint32) bool { r := numericRank[oid]; return r > 0 && r < 4 }

func isFloat(oid uint32) bool { return oid == pgtype.Float4OID || oid == pgtype.Float8OID }

func noOperator(op string, a, b uint32) error {
	return sqlerr.New("42883", "operator does not exist: %s %s %s", pgvalue.TypeName(a), op, pgvalue.TypeName(b))
}

// resolve types an expression for the shard columns the Aggregate reads.
func (a *aggSource) resolve(x *planner.PostExpr) (*postNode, error) {
	n := &postNode{x: x, typmod: -1}
	for _, arg := range x.Args {
		c, err := a.resolve(arg)
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, c)
	}
	unsupported := func(what string, oid uint32) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard %s over a value of type %s is not supported", what, pgvalue.TypeName(oid)).
			WithHint("Cast the value to numeric, or pin the statement to one shard.")
	}
	switch x.Op {
	case planner.PostAgg:
		s := &a.specs[x.Agg]
		n.oid = s.result
		if s.Func == planner.AggMin || s.Func == planner.AggMax {
			n.typmod = s.part.field.TypeModifier
		}
	case planner.PostCol:
		c := a.inCols[x.Col]
		if c.typ == nil {
			return nil, unsupported("expression", c.field.DataTypeOID)
		}
		if err := c.readable(); err != nil {
			return nil, err
		}
		n.oid, n.typmod = c.field.DataTypeOID, c.field.TypeModifier
	case planner.PostConst:
		d, err := pgvalue.ParseNumeric(x.Literal)
		if err != nil {
			return nil, sqlerr.New(sqlerr.InvalidTextRepresentation, "invalid input syntax for type numeric: \"%s\"", x.Literal)
		}
		n.oid, n.konst = pgtype.NumericOID, pgvalue.Value{N: d}
		if i, ok := d.Int64(); ok && x.Int {
			n.oid, n.konst = pgtype.Int8OID, pgvalue.Value{I: i}
			if i >= math.MinInt32 && i <= math.MaxInt32 {
				n.oid = pgtype.Int4OID
			}
		}
	case planner.PostNull:
		n.oid = 0 // unknown: takes the type around it
	case planner.PostNeg:
		n.oid = n.args[0].oid
		if !isNumeric(n.oid) && n.oid != pgtype.IntervalOID {
			return nil, sqlerr.New("42883", "operator does not exist: - %s", pgvalue.TypeName(n.oid))
		}
	case planner.PostBinary:
		l, r := n.args[0].oid, n.args[1].oid
		switch {
		case l == 0 && r == 0:
			return nil, unsupported("operator "+x.Name, 0)
		case l == 0:
			l = r
		case r == 0:
			r = l
		}
		switch {
		case isNumeric(l) && isNumeric(r):
			n.oid = l
			if numericRank[r] > numericRank[l] {
				n.oid = r
			}
			if isFloat(n.oid) && (l != pgtype.Float4OID || r != pgtype.Float4OID) {
				n.oid = pgtype.Float8OID // int, numeric and real with real: double precision
			}
		case x.Name == "-" && l == r && l == pgtype.DateOID:
			n.oid = pgtype.Int4OID
		case x.Name == "-" && l == r && (l == pgtype.TimestampOID || l == pgtype.TimestamptzOID || l == pgtype.TimeOID),
			(x.Name == "+" || x.Name == "-") && l == r && l == pgtype.IntervalOID:
			n.oid = pgtype.IntervalOID
		case pgvalue.TypeOf(l) != nil && pgvalue.TypeOf(l).Kind == pgvalue.KindBytes && pgvalue.TypeOf(r) != nil && pgvalue.TypeOf(r).Kind == pgvalue.KindBytes:
			return nil, noOperator(x.Name, l, r) // no arithmetic on text, as in Postgres
		default:
			return nil, unsupported("operator "+x.Name, l)
		}
	case planner.PostFunc: // round
		t := n.args[0].oid
		if len(n.args) == 2 {
			if !isInt(n.args[1].oid) {
				return nil, sqlerr.New("42883", "function round(%s, %s) does not exist", pgvalue.TypeName(t), pgvalue.TypeName(n.args[1].oid))
			}
			if !isNumeric(t) || isFloat(t) {
				return nil, sqlerr.New("42883", "function round(%s, integer) does not exist", pgvalue.TypeName(t)).
					WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
			}
			n.oid = pgtype.NumericOID
			break
		}
		switch {
		case t == pgtype.NumericOID:
			n.oid = t
		case isNumeric(t):
			n.oid = pgtype.Float8OID
		default:
			return nil, unsupported("round()", t)
		}
	case planner.PostCast:
		n.oid = castOIDs[x.Name]
		if from := n.args[0].oid; from != 0 && !isNumeric(from) {
			return nil, unsupported("cast", from)
		}
	case planner.PostCase, planner.PostCoalesce:
		for _, c := range n.args {
			switch {
			case c.oid == 0:
			case n.oid == 0:
				n.oid = c.oid
			case isNumeric(n.oid) && isNumeric(c.oid):
				if numericRank[c.oid] > numericRank[n.oid] {
					n.oid = c.oid
				}
			case c.oid != n.oid:
				return nil, sqlerr.New("42804", "%s types %s and %s cannot be matched", map[bool]string{true: "CASE", false: "COALESCE"}[x.Op == planner.PostCase],
					pgvalue.TypeName(n.oid), pgvalue.TypeName(c.oid))
			}
		}
		if n.oid == 0 {
			n.oid = pgtype.TextOID
		}
		if !isNumeric(n.oid) && n.oid != pgtype.BoolOID && n.oid != pgtype.IntervalOID {
			return nil, unsupported(map[bool]string{true: "CASE", false: "coalesce()"}[x.Op == planner.PostCase], n.oid)
		}
		// exprTypmod: the branches' typmod when they all agree.
		n.typmod = n.args[0].typmod
		for _, c := range n.args {
			if c.typmod != n.typmod || c.oid != n.oid {
				n.typmod = -1
			}
		}
	case planner.PostNullIf:
		n.oid, n.typmod = n.args[0].oid, n.args[0].typmod
		iv := n.oid == pgtype.IntervalOID && (n.args[1].oid == 0 || n.args[1].oid == n.oid)
		if !iv && (!isNumeric(n.oid) || n.args[1].oid != 0 && !isNumeric(n.args[1].oid)) {
			return nil, unsupported("nullif()", n.oid)
		}
	}
	return n, nil
}

// field describes the column an expression produces.
func (n *postNode) field(name []byte, format int16) pgproto3.FieldDescription {
	size := map[uint32]int16{pgtype.Int2OID: 2, pgtype.Int4OID: 4, pgtype.Int8OID: 8, pgtype.Float4OID: 4, pgtype.Float8OID: 8,
		pgtype.BoolOID: 1, pgtype.IntervalOID: 16}[n.oid]
	if size == 0 {
		size = -1
	}
	return pgproto3.FieldDescription{Name: name, DataTypeOID: n.oid, DataTypeSize: size, TypeModifier: n.typmod, Format: format}
}

// evalPost computes an expression for one group.
func (a *aggSource) evalPost(n *postNode, g *aggGroup, results []pgvalue.Value) (pgvalue.Value, error) {
	x := n.x
	switch x.Op {
	case planner.PostAgg:
		return results[x.Agg], nil
	case planner.PostCol:
		return a.inCols[x.Col].decode(g.first[x.Col])
	case planner.PostConst:
		return n.konst, nil
	case planner.PostNull:
		return pgvalue.Value{Null: true}, nil
	case planner.PostCase:
		for i, w := range x.Whens {
			t, err := a.eval(w, g, results)
			if err != nil {
				return pgvalue.Value{}, err
			}
			if t == truthTrue {
				return a.evalAs(n.args[i], n.oid, g, results)
			}
		}
		return a.evalAs(n.args[len(n.args)-1], n.oid, g, results)
	case planner.PostCoalesce:
		for _, c := range n.args {
			v, err := a.evalAs(c, n.oid, g, results)
			if err != nil || !v.Null {
				return v, err
			}
		}
		return pgvalue.Value{Null: true}, nil
	}
	args := make([]pgvalue.Value, len(n.args))
	for i, c := range n.args {
		v, err := a.evalPost(c, g, results)
		if err != nil {
			return v, err
		}
		if v.Null && x.Op != planner.PostNullIf {
			return pgvalue.Value{Null: true}, nil // strict
		}
		args[i] = v
	}
	switch x.Op {
	case planner.PostNeg:
		return negate(args[0], n.oid)
	case planner.PostBinary:
		l, r := n.args[0].oid, n.args[1].oid
		if n.oid == pgtype.IntervalOID || n.oid == pgtype.Int4OID && l == pgtype.DateOID {
			return subtractTimes(x.Name, args[0], args[1], l)
		}
		lv, err := castValue(args[0], l, n.oid, false)
		if err != nil {
			return lv, err
		}
		rv, err := castValue(args[1], r, n.oid, false)
		if err != nil {
			return rv, err
		}
		return arith(x.Name, lv, rv, n.oid)
	case planner.PostFunc:
		v, err := castValue(args[0], n.args[0].oid, n.oid, false)
		if err != nil {
			return v, err
		}
		if n.oid == pgtype.Float8OID {
			return pgvalue.Value{F: math.RoundToEven(v.F)}, nil
		}
		digits := int64(0)
		if len(args) == 2 {
			digits = args[1].I
		}
		return pgvalue.Value{N: v.N.Round(int(max(min(digits, math.MaxInt32), math.MinInt32)))}, nil
	case planner.PostCast:
		return castValue(args[0], n.args[0].oid, n.oid, true)
	case planner.PostNullIf:
		if args[0].Null {
			return args[0], nil
		}
		if args[1].Null {
			return args[0], nil
		}
		t := n.oid
		if numericRank[n.args[1].oid] > numericRank[t] {
			t = n.args[1].oid
		}
		lv, err := castValue(args[0], n.oid, t, false)
		if err != nil {
			return lv, err
		}
		rv, err := castValue(args[1], n.args[1].oid, t, false)
		if err != nil {
			return rv, err
		}
		if pgvalue.Compare(pgvalue.TypeOf(t).Kind, lv, rv) == 0 {
			return pgvalue.Value{Null: true}, nil
		}
		return args[0], nil
	}
	return pgvalue.Value{}, sqlerr.New(sqlerr.InternalError, "unknown expression")
}

// evalAs evaluates a branch of CASE or coalesce in their common type.
func (a *aggSource) evalAs(n *postNode, oid uint32, g *aggGroup, results []pgvalue.Value) (pgvalue.Value, error) {
	v, err := a.evalPost(n, g, results)
	if err != nil || v.Null || n.oid == oid || n.oid == 0 {
		return v, err
	}
	return castValue(v, n.oid, oid, false)
}

func intRange(oid uint32) (int64, int64, error) {
	switch oid {
	case pgtype.Int2OID:
		return math.MinInt16, math.MaxInt16, sqlerr.New(sqlerr.NumericValueOutOfRange, "smallint out of range")
	case pgtype.Int4OID:
		return math.MinInt32, math.MaxInt32, sqlerr.New(sqlerr.NumericValueOutOfRange, "integer out of range")
	}
	return math.MinInt64, math.MaxInt64, errBigintRange
}

// castValue converts v of type from to type to: implicitly (the operand
// of a mixed operation) or by an explicit cast.
func castValue(v pgvalue.Value, from, to uint32, explicit bool) (pgvalue.Value, error) {
	if v.Null || from == to || from == 0 {
		if from == 0 && !v.Null {
			return pgvalue.Value{}, sqlerr.New(sqlerr.InternalError, "untyped value")
		}
		return v, nil
	}
	switch {
	case isInt(to):
		lo, hi, rangeErr := intRange(to)
		var i int64
		switch {
		case isInt(from):
			i = v.I
		case from == pgtype.NumericOID:
			if v.N.IsNaN() {
				return v, sqlerr.New(sqlerr.FeatureNotSupported, "cannot convert NaN to %s", pgvalue.TypeName(to))
			}
			if !v.N.Finite() {
				return v, sqlerr.New(sqlerr.FeatureNotSupported, "cannot convert infinity to %s", pgvalue.TypeName(to))
			}
			var ok bool
			if i, ok = v.N.Int64(); !ok {
				return v, rangeErr
			}
		default:
			f := math.RoundToEven(v.F)
			if math.IsNaN(f) || f < float64(lo) || f >= -float64(lo) {
				return v, rangeErr
			}
			i = int64(f)
		}
		if i < lo || i > hi {
			return v, rangeErr
		}
		return pgvalue.Value{I: i}, nil
	case to == pgtype.NumericOID:
		switch {
		case isInt(from):
			return pgvalue.Value{N: pgvalue.DecimalFromInt(v.I)}, nil
		case from == pgtype.Float4OID:
			return pgvalue.Value{N: pgvalue.DecimalFromFloat(float64(float32(v.F)), 6)}, nil
		}
		return pgvalue.Value{N: pgvalue.DecimalFromFloat(v.F, 15)}, nil
	case to == pgtype.Float8OID:
		switch {
		case isInt(from):
			return pgvalue.Value{F: float64(v.I)}, nil
		case from == pgtype.NumericOID:
			f := v.N.Float64()
			if math.IsInf(f, 0) && v.N.Finite() {
				return v, sqlerr.New(sqlerr.NumericValueOutOfRange, "\"%s\" is out of range for type double precision", v.N.AppendText(nil))
			}
			return pgvalue.Value{F: f}, nil
		}
		return pgvalue.Value{F: v.F}, nil
	case to == pgtype.Float4OID:
		var f float32
		switch {
		case isInt(from):
			f = float32(v.I)
		case from == pgtype.NumericOID:
			f = float32(v.N.Float64()) // float4in of the text: rounded once from the double nearest
			if math.IsInf(float64(f), 0) && v.N.Finite() {
				return v, sqlerr.New(sqlerr.NumericValueOutOfRange, "\"%s\" is out of range for type real", v.N.AppendText(nil))
			}
		default:
			f = float32(v.F)
			if err := checkFloat(float64(f), math.IsInf(v.F, 0), v.F == 0); err != nil {
				return v, err
			}
		}
		return pgvalue.Value{F: float64(f)}, nil
	}
	return v, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard cast from %s to %s is not supported", pgvalue.TypeName(from), pgvalue.TypeName(to))
}

// checkFloat is float.c's check_float8_val.
func checkFloat(r float64, infOK, zeroOK bool) error {
	if math.IsInf(r, 0) && !infOK {
		return floatOverflow()
	}
	if r == 0 && !zeroOK {
		return sqlerr.New(sqlerr.NumericValueOutOfRange, "value out of range: underflow")
	}
	return nil
}

func negate(v pgvalue.Value, oid uint32) (pgvalue.Value, error) {
	switch {
	case isInt(oid):
		lo, _, rangeErr := intRange(oid)
		if v.I == lo {
			return v, rangeErr
		}
		return pgvalue.Value{I: -v.I}, nil
	case oid == pgtype.NumericOID:
		return pgvalue.Value{N: v.N.Neg()}, nil
	case oid == pgtype.IntervalOID:
		iv, err := pgvalue.IntervalOf(v).Neg()
		return iv.Value(), err
	}
	return pgvalue.Value{F: -v.F}, nil
}

// arith applies + - * / to two values of type oid.
func arith(op string, l, r pgvalue.Value, oid uint32) (pgvalue.Value, error) {
	switch {
	case isInt(oid):
		lo, hi, rangeErr := intRange(oid)
		var res int64
		switch op {
		case "+":
			res = l.I + r.I
			if (r.I > 0 && res < l.I) || (r.I < 0 && res > l.I) {
				return l, rangeErr
			}
		case "-":
			res = l.I - r.I
			if (r.I < 0 && res < l.I) || (r.I > 0 && res > l.I) {
				return l, rangeErr
			}
		case "*":
			res = l.I * r.I
			if l.I != 0 && (res/l.I != r.I || l.I == -1 && r.I == math.MinInt64 || r.I == -1 && l.I == math.MinInt64) {
				return l, rangeErr
			}
		case "/":
			if r.I == 0 {
				return l, pgvalue.ErrDivisionByZero
			}
			if r.I == -1 && l.I == lo {
				return l, rangeErr
			}
			res = l.I / r.I
		}
		if res < lo || res > hi {
			return l, rangeErr
		}
		return pgvalue.Value{I: res}, nil
	case oid == pgtype.NumericOID:
		switch op {
		case "+":
			return pgvalue.Value{N: l.N.Add(r.N)}, nil
		case "-":
			return pgvalue.Value{N: l.N.Sub(r.N)}, nil
		case "*":
			return pgvalue.Value{N: l.N.Mul(r.N)}, nil
		}
		switch {
		case l.N.IsNaN() || r.N.IsNaN():
			return pgvalue.Value{N: l.N.Add(r.N)}, nil // NaN
		case r.N.Finite() && r.N.Sign() == 0:
			return l, pgvalue.ErrDivisionByZero
		case !r.N.Finite():
			return l, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard division by an infinite numeric is not supported")
		}
		return pgvalue.Value{N: l.N.Div(r.N)}, nil
	}
	single := oid == pgtype.Float4OID
	round := func(f float64) float64 {
		if single {
			return float64(float32(f))
		}
		return f
	}
	infOK := math.IsInf(l.F, 0) || math.IsInf(r.F, 0)
	var res float64
	var err error
	switch op {
	case "+":
		res = round(l.F + r.F)
		err = checkFloat(res, infOK, true)
	case "-":
		res = round(l.F - r.F)
		err = checkFloat(res, infOK, true)
	case "*":
		res = round(l.F * r.F)
		err = checkFloat(res, infOK, l.F == 0 || r.F == 0)
	case "/":
		if r.F == 0 {
			return l, pgvalue.ErrDivisionByZero
		}
		res = round(l.F / r.F)
		err = checkFloat(res, math.IsInf(l.F, 0), l.F == 0 || math.IsInf(r.F, 0))
	}
	return pgvalue.Value{F: res}, err
}

// subtractTimes is date_mi (days, int4), timestamp_mi (an interval of
// days and time), time_mi_time (an interval of time), and interval_pl and
// interval_mi (op).
func subtractTimes(op string, l, r pgvalue.Value, oid uint32) (pgvalue.Value, error) {
	inf := func(v pgvalue.Value) bool { return v.I == math.MaxInt64 || v.I == math.MinInt64 }
	switch oid {
	case pgtype.IntervalOID:
		a, b := pgvalue.IntervalOf(l), pgvalue.IntervalOf(r)
		res, err := a.Add(b)
		if op == "-" {
			res, err = a.Sub(b)
		}
		return res.Value(), err
	case pgtype.TimeOID:
		return pgvalue.IntervalFromMicros(l.I - r.I).Value(), nil
	case pgtype.DateOID:
		if inf(l) || inf(r) {
			return l, sqlerr.New("22008", "cannot subtract infinite dates")
		}
		return pgvalue.Value{I: l.I - r.I}, nil
	}
	if inf(l) || inf(r) {
		return l, sqlerr.New("22008", "cannot subtract infinite timestamps")
	}
	d := l.I - r.I
	if (r.I < 0 && d < l.I) || (r.I > 0 && d > l.I) {
		return l, sqlerr.New("22008", "interval out of range")
	}
	return pgvalue.IntervalFromMicros(d).Value(), nil
}

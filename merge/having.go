package merge

import (
	"strings"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shardgate/shardgate/pgvalue"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// HAVING over the combined aggregates, in SQL's three-valued logic.

// truth is SQL's three-valued logic.
type truth uint8

const (
	truthNull truth = iota
	truthFalse
	truthTrue
)

// eval evaluates a HAVING predicate for one group.
func (a *aggSource) eval(p *planner.Predicate, g *aggGroup, results []pgvalue.Value) (truth, error) {
	switch p.Op {
	case planner.PredAnd, planner.PredOr:
		out := truthTrue
		if p.Op == planner.PredOr {
			out = truthFalse
		}
		for _, arg := range p.Args {
			t, err := a.eval(arg, g, results)
			if err != nil {
				return 0, err
			}
			switch {
			case p.Op == planner.PredAnd && t == truthFalse, p.Op == planner.PredOr && t == truthTrue:
				return t, nil
			case t == truthNull:
				out = truthNull
			}
		}
		return out, nil
	case planner.PredNot:
		t, err := a.eval(p.Args[0], g, results)
		switch t {
		case truthTrue:
			t = truthFalse
		case truthFalse:
			t = truthTrue
		}
		return t, err
	case planner.PredIsNull, planner.PredIsNotNull:
		v, _, err := a.operand(p.Left, nil, g, results)
		if err != nil {
			return 0, err
		}
		if v.Null == (p.Op == planner.PredIsNull) {
			return truthTrue, nil
		}
		return truthFalse, nil
	}
	// A comparison: the column side fixes the literal's type.
	left, lt, err := a.operand(p.Left, nil, g, results)
	if err != nil {
		return 0, err
	}
	right, rt, err := a.operand(p.Right, lt, g, results)
	if err != nil {
		return 0, err
	}
	if lt == nil {
		if left, lt, err = a.operand(p.Left, rt, g, results); err != nil {
			return 0, err
		}
	}
	if p.Cmp != "=" && p.Cmp != "<>" {
		for _, t := range []*pgvalue.Type{lt, rt} {
			if t != nil {
				if err := a.e.checkOrdering(t, "", "HAVING with "+p.Cmp+" on text"); err != nil {
					return 0, err
				}
			}
		}
	}
	if left.Null || right.Null {
		return truthNull, nil
	}
	c, err := pgvalue.CompareMixed(left, lt, right, rt)
	if err != nil {
		return 0, err
	}
	var ok bool
	switch p.Cmp {
	case "=":
		ok = c == 0
	case "<>":
		ok = c != 0
	case "<":
		ok = c < 0
	case "<=":
		ok = c <= 0
	case ">":
		ok = c > 0
	case ">=":
		ok = c >= 0
	}
	if ok {
		return truthTrue, nil
	}
	return truthFalse, nil
}

// operand evaluates one side of a HAVING comparison: an aggregate, a
// group value, or a literal or parameter read as the other side's type
// (like to Postgres's unknown-typed constants).
func (a *aggSource) operand(o planner.Operand, other *pgvalue.Type, g *aggGroup, results []pgvalue.Value) (pgvalue.Value, *pgvalue.Type, error) {
	switch {
	case o.Expr != nil:
		n, err := a.resolve(o.Expr) // small: resolved per group
		if err != nil {
			return pgvalue.Value{}, nil, err
		}
		v, err := a.evalPost(n, g, results)
		if err != nil {
			return v, nil, err
		}
		t := pgvalue.TypeOf(n.oid)
		if t == nil {
			return v, nil, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard HAVING on a value of type %s is not supported", pgvalue.TypeName(n.oid))
		}
		return v, t, nil
	case o.Value == nil && o.Agg >= 0:
		s := &a.specs[o.Agg]
		return results[o.Agg], pgvalue.TypeOf(s.result), nil
	case o.Value == nil:
		c := a.inCols[o.Col]
		if c.typ == nil {
			return pgvalue.Value{}, nil, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard HAVING on a value of type %s is not supported", pgvalue.TypeName(c.field.DataTypeOID))
		}
		v, err := c.decode(g.first[o.Col])
		return v, c.typ, err
	}
	if other == nil {
		return pgvalue.Value{Null: o.Value.Null}, nil, nil
	}
	v, err := a.literal(o, other)
	return v, other, err
}

// literal reads a HAVING literal or parameter as a value of type t.
func (a *aggSource) literal(o planner.Operand, t *pgvalue.Type) (pgvalue.Value, error) {
	ref := o.Value
	if ref.Null {
		return pgvalue.Value{Null: true}, nil
	}
	text := ref.Literal
	quoted, quotedParam := o.Quoted, false
	if ref.Param > 0 {
		if ref.Param > len(a.e.Params) {
			return pgvalue.Value{}, sqlerr.New(sqlerr.ProtocolViolation, "there is no parameter $%d", ref.Param)
		}
		p := a.e.Params[ref.Param-1]
		if p.Null {
			return pgvalue.Value{Null: true}, nil
		}
		if p.Binary {
			pt := pgvalue.TypeOf(p.OID)
			if pt == nil {
				return pgvalue.Value{}, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard HAVING with a binary parameter of type %s is not supported", pgvalue.TypeName(p.OID))
			}
			v, err := pt.Binary(p.Value)
			if err != nil {
				return pgvalue.Value{}, sqlerr.New(sqlerr.ProtocolViolation, "incorrect binary data format in bind parameter %d", ref.Param)
			}
			return pgvalue.Convert(v, pt, t)
		}
		text, quoted, quotedParam = string(p.Value), true, true
	}
	bad := func() error {
		return sqlerr.New(sqlerr.InvalidTextRepresentation, "invalid input syntax for type %s: \"%s\"", t.Name, text)
	}
	var v pgvalue.Value
	switch t.Kind {
	case pgvalue.KindInt, pgvalue.KindNumeric:
		d, err := pgvalue.ParseNumeric(text)
		if err != nil {
			return pgvalue.Value{}, bad()
		}
		v = pgvalue.Value{N: d}
	case pgvalue.KindFloat:
		f, err := pgvalue.TypeOf(pgtype.Float8OID).Text([]byte(strings.TrimSpace(text)))
		if err != nil {
			return pgvalue.Value{}, bad()
		}
		v = f
	case pgvalue.KindBool:
		if !quoted && text != "true" && text != "false" {
			return pgvalue.Value{}, operatorMismatch(t)
		}
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "t", "true", "yes", "y", "on", "1":
			v = pgvalue.Value{I: 1}
		case "f", "false", "no", "n", "off", "0":
			v = pgvalue.Value{}
		default:
			return pgvalue.Value{}, bad()
		}
	case pgvalue.KindBytes, pgvalue.KindTime, pgvalue.KindInterval:
		if !quoted {
			return pgvalue.Value{}, operatorMismatch(t)
		}
		var err error
		v, err = t.Text([]byte(text))
		if err == nil && t.Kind == pgvalue.KindInterval && !quotedParam && styleDependent(text) {
			// Under sql_standard a leading minus applies to every field
			// when no other has a sign of its own: '-1 days 02:00:00' is
			// -1 day -2 hours, under the other styles -1 day +2 hours.
			// Postgres reads a literal once, with the style of the
			// moment it parses the statement, which may not be this
			// execution's (a prepared statement): such a literal is
			// refused under every style.
			err = pgvalue.ErrIntervalStyle
		} else if err == nil && t.Kind == pgvalue.KindInterval && a.e.styles.Interval() == pgvalue.IntervalSQLStandard &&
			strings.HasPrefix(strings.TrimSpace(text), "-") {
			err = pgvalue.ErrIntervalStyle // a parameter, read with this execution's style
		}
		if err != nil && t.Kind == pgvalue.KindInterval && !quotedParam && styleDependent(text) {
			return pgvalue.Value{}, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard HAVING cannot read %q as %s: IntervalStyle sql_standard reads it otherwise than the other styles, and Postgres reads it with the style of the moment it parses the statement", text, t.Name).
				WithHint("Give every field its sign ('-1 days +02:00:00' or '-1 days -02:00:00').")
		}
		if err != nil {
			return pgvalue.Value{}, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard HAVING cannot read %q as %s", text, t.Name).
				WithHint("Write the value in the form Postgres prints it.")
		}
	}
	if ref.Negate {
		switch t.Kind {
		case pgvalue.KindInt, pgvalue.KindNumeric:
			v.N = v.N.Neg()
		case pgvalue.KindFloat:
			v.F = -v.F
		}
	}
	if t.Kind == pgvalue.KindInt {
		return pgvalue.Value{N: v.N}, nil // compared as numeric, see pgvalue.CompareMixed
	}
	return v, nil
}

func operatorMismatch(t *pgvalue.Type) error {
	return sqlerr.New("42883", "operator does not exist: %s compared with a number", t.Name)
}

// styleDependent reports an interval text that IntervalStyle sql_standard
// reads otherwise than the other styles: a leading minus, no other field
// with a sign of its own, and more than one field with digits
// ('-1 days 02:00:00', '-1 years 2 mons').
func styleDependent(text string) bool {
	fields := strings.Fields(text)
	if len(fields) == 0 || !strings.HasPrefix(fields[0], "-") {
		return false
	}
	digits := 0
	for i, f := range fields {
		if i > 0 && (strings.HasPrefix(f, "-") || strings.HasPrefix(f, "+")) {
			return false
		}
		if strings.ContainsAny(f, "0123456789") {
			digits++
		}
	}
	return digits > 1
}

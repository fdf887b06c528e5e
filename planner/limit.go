package planner

import (
	"encoding/binary"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
)

// Limit applies the client's LIMIT and OFFSET to merged rows: it skips
// Offset rows and passes Count more, then stops reading. Each shard was
// sent LIMIT offset+count (and no OFFSET), which is enough: the rows the
// client gets are among the first offset+count of some shard.
type Limit struct {
	Input Primitive
	// Offset and Count are literals or parameters; nil when absent (or
	// LIMIT ALL / LIMIT NULL for Count).
	Offset, Count *ValueRef
	// WithTies is FETCH FIRST ... WITH TIES: after Count rows, the rows
	// that sort equal to the last one pass too. Shards run it too, with
	// offset+count, which gives every row the merge needs.
	WithTies bool
}

// Name implements Primitive.
func (l *Limit) Name() string { return "Limit" }

// Inputs implements Primitive.
func (l *Limit) Inputs() []Primitive { return []Primitive{l.Input} }

func (l *Limit) mode() RouteMode { return ModeMerge }

func (l *Limit) targets(pl *Plan, params []Param) ([]Target, error) {
	return l.Input.targets(pl, params)
}

func (l *Limit) explain(w *explainWriter, pl *Plan, depth int) {
	s := "Limit"
	if l.Count != nil {
		s += " count=" + limitString(l.Count)
	}
	if l.Offset != nil {
		s += " offset=" + limitString(l.Offset)
	}
	if l.WithTies {
		s += " with ties"
	}
	w.line(depth, "%s", s)
	l.Input.explain(w, pl, depth+1)
}

// limitString renders a LIMIT operand for EXPLAIN: numbers unquoted.
func limitString(v *ValueRef) string {
	if v.Param == 0 && !v.Null && isNumeric(v.Literal) {
		if v.Negate {
			return "-" + v.Literal
		}
		return v.Literal
	}
	return v.String()
}

// Values evaluates the offset (0 when absent or NULL) and count (-1 when
// absent or NULL: no limit) for the given parameters, with the errors
// Postgres gives: 2201X/2201W for negative values, 22P02 for text that is
// not a bigint.
func (l *Limit) Values(params []Param) (offset, count int64, err error) {
	count = -1
	if l.Offset != nil {
		v, null, err := limitValue(*l.Offset, params)
		if err != nil {
			return 0, 0, err
		}
		if !null {
			if v < 0 {
				return 0, 0, sqlerr.New("2201X", "OFFSET must not be negative")
			}
			offset = v
		}
	}
	if l.Count != nil {
		v, null, err := limitValue(*l.Count, params)
		if err != nil {
			return 0, 0, err
		}
		switch {
		case null && l.WithTies && l.Count.Param == 0:
			// Postgres checks the constant while parsing; a NULL
			// parameter counts as no limit.
			return 0, 0, sqlerr.New("2201W", "row count cannot be null in FETCH FIRST ... WITH TIES clause")
		case null:
		case v < 0:
			return 0, 0, sqlerr.New("2201W", "LIMIT must not be negative")
		default:
			count = v
		}
	}
	return offset, count, nil
}

// limitValue converts a LIMIT/OFFSET operand to bigint as the backend's
// coercion would: integers as they are, numeric rounded half away from
// zero, real and double precision to the nearest even, text through
// int8in.
func limitValue(v ValueRef, params []Param) (n int64, null bool, err error) {
	if v.Param > 0 && v.Param <= len(params) && len(v.ops) == 0 {
		if p := params[v.Param-1]; p.Binary && p.OID == 0 && !p.Null {
			// An unspecified type is inferred by the backend from the
			// context (bigint, or a cast's type): go by the length.
			switch len(p.Value) {
			case 8:
				n = int64(binary.BigEndian.Uint64(p.Value))
			case 4:
				n = int64(int32(binary.BigEndian.Uint32(p.Value)))
			case 2:
				n = int64(int16(binary.BigEndian.Uint16(p.Value)))
			default:
				return 0, false, sqlerr.New(sqlerr.FeatureNotSupported,
					"binary parameter $%d of unspecified type cannot be used as a cross-shard LIMIT or OFFSET", v.Param).
					WithHint("Send it in text format, or as int2, int4 or int8.")
			}
			if v.Negate {
				n = -n
			}
			return n, false, nil
		}
	}
	if v.Param > len(params) {
		return 0, false, sqlerr.New(sqlerr.ProtocolViolation,
			"bind message supplies %d parameters, but LIMIT uses $%d", len(params), v.Param)
	}
	val, err := v.eval(params)
	if err == nil {
		val, err = val.cast(typeInt8)
	}
	if err != nil || val.null {
		return 0, val.null, err
	}
	return val.i, false, nil
}

// limitRef recognises a LIMIT or OFFSET operand the proxy can evaluate:
// an integer, numeric or string literal, NULL, a parameter, with a
// unary minus or integer casts. ok is false for anything else.
func limitRef(n *pg.Node) (*ValueRef, bool) {
	if n == nil {
		return nil, true
	}
	if tc, isCast := n.GetNode().(*pg.Node_TypeCast); isCast {
		t := tc.TypeCast.TypeName
		if t == nil || len(t.Names) == 0 || len(t.ArrayBounds) > 0 || len(t.Typmods) > 0 {
			return nil, false
		}
		switch stringValue(t.Names[len(t.Names)-1]) {
		case "int2", "int4", "int8", "smallint", "integer", "int", "bigint":
		default:
			return nil, false
		}
		return limitRef(tc.TypeCast.Arg)
	}
	v, ok := valueRef(n)
	if !ok {
		return nil, false
	}
	return &v, true
}

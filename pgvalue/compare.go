package pgvalue

import (
	"math"
	"math/big"

	"github.com/shardgate/shardgate/sqlerr"
)

// Convert turns a value of type from (a binary HAVING parameter's) into
// one comparable with type to: integers become numeric for numeric
// columns and vice versa.
func Convert(v Value, from, to *Type) (Value, error) {
	switch {
	case from.Kind == to.Kind && to.Kind != KindInt:
		return v, nil
	case (from.Kind == KindInt || from.Kind == KindNumeric) && (to.Kind == KindInt || to.Kind == KindNumeric):
		if from.Kind == KindInt {
			v.N = DecimalFromInt(v.I)
		}
		return Value{N: v.N}, nil
	case from.Kind == KindInt && to.Kind == KindFloat:
		return Value{F: float64(v.I)}, nil
	case from.Kind == KindNumeric && to.Kind == KindFloat:
		f, _ := new(big.Float).SetInt(v.N.u).Float64()
		return Value{F: f / math.Pow(10, float64(v.N.scale))}, nil
	}
	return Value{}, sqlerr.New("42883", "operator does not exist: %s compared with %s", to.Name, from.Name)
}

// CompareMixed compares two HAVING operands, of types at and bt; literals
// for integer columns are numeric (so count(*) > 2.5 is exact). Types
// that cannot be compared are 42883, two constants 0A000.
func CompareMixed(a Value, at *Type, b Value, bt *Type) (int, error) {
	if at == nil || bt == nil {
		return 0, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard HAVING comparison of two constants is not supported")
	}
	num := func(v Value, t *Type) Decimal {
		if t.Kind == KindInt && v.N.u == nil {
			return DecimalFromInt(v.I)
		}
		return v.N
	}
	switch {
	case (at.Kind == KindInt || at.Kind == KindNumeric) && (bt.Kind == KindInt || bt.Kind == KindNumeric):
		return num(a, at).Cmp(num(b, bt)), nil
	case at.Kind != bt.Kind:
		return 0, sqlerr.New("42883", "operator does not exist: %s compared with %s", at.Name, bt.Name)
	}
	return Compare(at.Kind, a, b), nil
}

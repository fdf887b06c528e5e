package vschema

import (
	"strconv"
	"unicode/utf8"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
)

// Index is a group's sharding index. Exactly one of Column and Expr is
// set.
type Index struct {
	Name     string
	Column   string        // a column index: the index column
	Expr     *keyexpr.Expr // an expression index; nil for a column index
	Type     KeyType
	Function Function
}

// Columns returns the columns the key is computed from, under the index's
// own names (a member table may rename a column index's column; see
// Table.KeyColumns).
func (ix *Index) Columns() []string {
	if ix.Expr != nil {
		return ix.Expr.Columns()
	}
	return []string{ix.Column}
}

// String describes the index for plans: "by_customer(customer_id)" or
// "by_sku(lower(sku))".
func (ix *Index) String() string {
	if ix.Expr != nil {
		return ix.Name + "(" + ix.Expr.String() + ")"
	}
	return ix.Name + "(" + ix.Column + ")"
}

// KeyFromColumns computes the key of a row of a table that uses the index
// under the index's own column names. env returns a column's value, and
// false if the row has none, which fails with *keyexpr.MissingColumnError.
// Use Table.KeyFromColumns for a member table that renames the column.
func (ix *Index) KeyFromColumns(env func(col string) (keyexpr.Value, bool)) (Key, error) {
	return ix.keyFrom(ix.Column, env)
}

func (ix *Index) keyFrom(column string, env func(col string) (keyexpr.Value, bool)) (Key, error) {
	if ix.Expr != nil {
		v, err := ix.Expr.Eval(env)
		if err != nil {
			return Key{}, err
		}
		return ix.KeyFromValue(v)
	}
	v, ok := env(column)
	if !ok {
		return Key{}, &keyexpr.MissingColumnError{Column: column}
	}
	return ix.KeyFromValue(v)
}

// KeyFromText computes the key from the text form of the one column the
// index reads, such as a literal or a text-format parameter compared with
// that column: for a column index the value is converted to the index
// type; for an expression over one column (lower(sku)) the expression is
// evaluated first. An expression over several columns is an error; use
// KeyFromColumns. When the text is already the expression's result (a
// WHERE clause that repeats the expression), use KeyFromValue.
func (ix *Index) KeyFromText(s string) (Key, error) {
	if ix.Expr == nil {
		return ix.KeyFromValue(keyexpr.Text(s))
	}
	cols := ix.Expr.Columns()
	if len(cols) != 1 {
		return Key{}, sqlerr.New(sqlerr.FeatureNotSupported, "index %q reads %d columns; its key cannot be computed from one value", ix.Name, len(cols))
	}
	return ix.KeyFromColumns(func(col string) (keyexpr.Value, bool) {
		return keyexpr.Text(s), col == cols[0]
	})
}

// KeyFromValue converts the value of the index column or expression to a
// key of the index type, as Postgres would assign it to a column of that
// type: text becomes an integer or a uuid through the type's input
// function (22P02 if malformed, 22003 if out of range), an integer must
// fit the type (22003), an integer becomes text in decimal. NULL is
// refused with 22004: a row without a shard key has nowhere to live.
func (ix *Index) KeyFromValue(v keyexpr.Value) (Key, error) {
	if v.IsNull() {
		return Key{}, sqlerr.New(sqlerr.NullValueNotAllowed, "shard key of index %q must not be null", ix.Name).
			WithDetail("The key is %s.", ix.keyDescription())
	}
	return convertKey(ix.Type, v)
}

func (ix *Index) keyDescription() string {
	if ix.Expr != nil {
		return ix.Expr.String()
	}
	return "column " + strconv.Quote(ix.Column)
}

// convertKey converts a non-NULL value to a key of type t.
func convertKey(t KeyType, v keyexpr.Value) (Key, error) {
	s, isText := v.AsText()
	if isText && !utf8.ValidString(s) {
		return Key{}, sqlerr.New(sqlerr.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\"")
	}
	n, isInt := v.AsInt()
	switch {
	case t.IsInteger() && isInt:
		limit := int64(1) << (t.bits() - 1)
		if t != Bigint && (n < -limit || n >= limit) {
			return Key{}, sqlerr.New(sqlerr.NumericValueOutOfRange, "%s out of range", t)
		}
		return IntegerKey(n), nil
	case t.IsInteger() && isText:
		n, err := keyexpr.ParseInteger(s, t.bits())
		if err != nil {
			return Key{}, err
		}
		return IntegerKey(n), nil
	case (t == Text || t == Varchar) && isText:
		return TextKey(s), nil
	case (t == Text || t == Varchar) && isInt:
		return TextKey(strconv.FormatInt(n, 10)), nil
	case t == UUID:
		if isInt {
			s = strconv.FormatInt(n, 10)
		}
		u, err := keyexpr.ParseUUID(s)
		if err != nil {
			return Key{}, err
		}
		return UUIDKey(u), nil
	}
	return Key{}, sqlerr.New(sqlerr.InternalError, "cannot convert %s to key type %s", v.Kind(), t)
}

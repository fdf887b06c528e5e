package planner

import (
	"encoding/binary"
	"strings"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// ArrayRef is the array of key = ANY(array): every element is a key. The
// array is a parameter ($1, $1::bigint[]) or a literal ('{1,2,3}'); its
// elements are only known in Targets. Drivers send IN lists this way
// (pgx: WHERE id = ANY($1) with a []int64).
type ArrayRef struct {
	Value  ValueRef
	Column string // the index column compared; "" when Whole
	Whole  bool   // the index expression itself is compared
}

func (r *ArrayRef) String() string { return "ANY(" + r.Value.String() + ")" }

// elementKeys returns the keys of the array's non-NULL elements that a
// key can equal.
func (r *ArrayRef) elementKeys(ix *vschema.Index, params []Param) ([]vschema.Key, error) {
	vals, err := r.values(params)
	if err != nil {
		return nil, err
	}
	keys := make([]vschema.Key, 0, len(vals))
	for _, v := range vals {
		k, ok, err := r.elementKey(ix, v)
		if err != nil {
			return nil, err
		}
		if ok {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// elementKey is the key of one element; ok is false for a NULL (NULL =
// key is never true) or a value no key equals.
func (r *ArrayRef) elementKey(ix *vschema.Index, v sqlValue) (vschema.Key, bool, error) {
	if v.null {
		return vschema.Key{}, false, nil
	}
	var err error
	for _, op := range r.Value.ops {
		if op.negate {
			v, err = v.negate()
		} else {
			v, err = v.cast(op.to)
		}
		if err != nil {
			return vschema.Key{}, false, err
		}
	}
	in, ok, err := keyInput(v, ix.Type, false, !r.Whole && ix.Expr != nil, r.Column)
	if err != nil || !ok {
		return vschema.Key{}, false, err
	}
	var k vschema.Key
	if r.Whole {
		k, err = ix.KeyFromValue(in)
	} else {
		k, err = ix.KeyFromColumns(func(col string) (keyexpr.Value, bool) { return in, col == r.Column })
	}
	return k, err == nil, err
}

// values reads the array's elements with their type: a literal's are of
// unknown type (the first cast, or the key column's type, reads them), a
// parameter's come with its array type's element type.
func (r *ArrayRef) values(params []Param) ([]sqlValue, error) {
	v := r.Value
	if v.Param == 0 {
		return parseArrayText(v.Literal, typeUnknown)
	}
	if v.Param > len(params) {
		_, err := paramSQLValue(params, v.Param) // the error
		return nil, err
	}
	p := params[v.Param-1]
	switch {
	case p.Null:
		return nil, nil
	case p.Binary:
		return parseArrayBinary(p.Value, v.Param)
	}
	return parseArrayText(string(p.Value), elementTypeOfArrayOID(p.OID))
}

func malformedArray(s string) error {
	return sqlerr.New(sqlerr.InvalidTextRepresentation, "malformed array literal: %q", s)
}

// parseArrayText reads the text form of an array ({1,2}, {"a b",NULL},
// {{1,2},{3,4}} flattened), as array_in does: elements separated by
// commas, double quotes with backslash escapes, unquoted NULL for null,
// white space around elements ignored. An optional dimension decoration
// ([1:2]={...}) is skipped. Elements are read as type elem.
func parseArrayText(s string, elem sqlType) ([]sqlValue, error) {
	texts, err := arrayElements(s)
	if err != nil {
		return nil, err
	}
	out := make([]sqlValue, len(texts))
	for i, t := range texts {
		if t.IsNull() {
			out[i] = sqlValue{typ: elem, null: true}
			continue
		}
		str, _ := t.AsText()
		if out[i], err = textValue(typeUnknown, str).cast(elem); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// arrayElements splits the text form of an array into its elements: text,
// or NULL.
func arrayElements(s string) ([]keyexpr.Value, error) {
	i := 0
	skipSpace := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	skipSpace()
	if i < len(s) && s[i] == '[' {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, malformedArray(s)
		}
		i += eq + 1
		skipSpace()
	}
	if i >= len(s) || s[i] != '{' {
		return nil, malformedArray(s)
	}
	var out []keyexpr.Value
	depth := 0
	expectElem := true
	for i < len(s) {
		c := s[i]
		switch {
		case isSpace(c):
			i++
		case c == '{':
			depth++
			i++
			expectElem = true
		case c == '}':
			depth--
			i++
			if depth == 0 {
				skipSpace()
				if i != len(s) {
					return nil, malformedArray(s)
				}
				return out, nil
			}
			expectElem = false
		case c == ',':
			i++
			expectElem = true
		case !expectElem:
			return nil, malformedArray(s)
		case c == '"':
			var b strings.Builder
			i++
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
				i++
			}
			if i >= len(s) {
				return nil, malformedArray(s)
			}
			i++
			out = append(out, keyexpr.Text(b.String()))
			expectElem = false
		default:
			// Unquoted: a backslash takes the next byte as is; white
			// space around the element (not escaped) is dropped.
			var b strings.Builder
			kept, escaped := 0, false
			for i < len(s) && s[i] != ',' && s[i] != '}' && s[i] != '{' && s[i] != '"' {
				switch {
				case s[i] == '\\' && i+1 < len(s):
					i++
					b.WriteByte(s[i])
					kept, escaped = b.Len(), true
				case isSpace(s[i]) && b.Len() == 0:
				default:
					b.WriteByte(s[i])
					if !isSpace(s[i]) {
						kept = b.Len()
					}
				}
				i++
			}
			elem := b.String()[:kept]
			if !escaped && strings.EqualFold(elem, "NULL") {
				out = append(out, keyexpr.Null())
			} else {
				out = append(out, keyexpr.Text(elem))
			}
			expectElem = false
		}
	}
	return nil, malformedArray(s)
}

// parseArrayBinary reads the binary array format of array_send: ndim,
// has-null flag, element type OID, ndim (length, lower bound) pairs, then
// each element as a length (-1 for NULL) and its bytes. Elements are
// decoded like binary parameters of their type.
func parseArrayBinary(b []byte, n int) ([]sqlValue, error) {
	elemOID, raw, err := arrayBinaryElements(b, n)
	if err != nil {
		return nil, err
	}
	out := make([]sqlValue, 0, len(raw))
	for _, e := range raw {
		if e == nil {
			out = append(out, sqlValue{null: true})
			continue
		}
		v, err := binaryValue(e, elemOID, n)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// arrayBinaryElements splits the binary array format into its element
// type and its elements' bytes (nil for NULL), flattened.
func arrayBinaryElements(b []byte, n int) (uint32, [][]byte, error) {
	bad := func() error {
		return sqlerr.New(sqlerr.ProtocolViolation, "incorrect binary data format in bind parameter %d", n)
	}
	if len(b) < 12 {
		return 0, nil, bad()
	}
	ndim := int(int32(binary.BigEndian.Uint32(b)))
	elemOID := binary.BigEndian.Uint32(b[8:])
	if ndim < 0 || ndim > 6 || len(b) < 12+8*ndim {
		return 0, nil, bad()
	}
	count := 0
	if ndim > 0 {
		count = 1
		for d := 0; d < ndim; d++ {
			dim := int(int32(binary.BigEndian.Uint32(b[12+8*d:])))
			if dim < 0 || dim > len(b) {
				return 0, nil, bad()
			}
			count *= dim
		}
	}
	if count > len(b) {
		return 0, nil, bad()
	}
	pos := 12 + 8*ndim
	out := make([][]byte, 0, count)
	for e := 0; e < count; e++ {
		if pos+4 > len(b) {
			return 0, nil, bad()
		}
		l := int(int32(binary.BigEndian.Uint32(b[pos:])))
		pos += 4
		if l == -1 {
			out = append(out, nil)
			continue
		}
		if l < 0 || pos+l > len(b) {
			return 0, nil, bad()
		}
		out = append(out, b[pos:pos+l:pos+l])
		pos += l
	}
	return elemOID, out, nil
}

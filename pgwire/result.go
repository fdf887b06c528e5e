package pgwire

import (
	"encoding/binary"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"
)

// BoolResult is a one-row, one-column bool answer the proxy makes itself:
// its RowDescription (column name, result format from formats, a Bind's
// result format codes: none is text) and its DataRow holding v.
func BoolResult(name string, formats []int16, v bool) (*pgproto3.RowDescription, *pgproto3.DataRow) {
	f := pgproto3.FieldDescription{Name: []byte(name), DataTypeOID: 16, DataTypeSize: 1, TypeModifier: -1}
	if len(formats) > 0 {
		f.Format = formats[0]
	}
	val := []byte{'f'}
	switch {
	case f.Format == 1 && v:
		val = []byte{1}
	case f.Format == 1:
		val = []byte{0}
	case v:
		val = []byte{'t'}
	}
	return &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{f}}, &pgproto3.DataRow{Values: [][]byte{val}}
}

// Int4Result is a one-row, one-column int4 answer the proxy makes itself,
// as BoolResult.
func Int4Result(name string, formats []int16, v int32) (*pgproto3.RowDescription, *pgproto3.DataRow) {
	f := pgproto3.FieldDescription{Name: []byte(name), DataTypeOID: 23, DataTypeSize: 4, TypeModifier: -1}
	if len(formats) > 0 {
		f.Format = formats[0]
	}
	val := strconv.AppendInt(nil, int64(v), 10)
	if f.Format == 1 {
		val = binary.BigEndian.AppendUint32(nil, uint32(v))
	}
	return &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{f}}, &pgproto3.DataRow{Values: [][]byte{val}}
}

// SendExplain sends the answer of an EXPLAIN the proxy makes itself:
// lines as rows of one text column (after their RowDescription, if
// describe), then CommandComplete.
func (e *Encoder) SendExplain(lines []string, describe bool) error {
	if describe {
		if err := e.Send(ExplainRowDescription); err != nil {
			return err
		}
	}
	for _, l := range lines {
		if err := e.Send(&pgproto3.DataRow{Values: [][]byte{[]byte(l)}}); err != nil {
			return err
		}
	}
	return e.Send(&pgproto3.CommandComplete{CommandTag: []byte("EXPLAIN")})
}

// ExplainRowDescription describes EXPLAIN's answer: one text column, QUERY
// PLAN.
var ExplainRowDescription = &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{
	Name: []byte("QUERY PLAN"), DataTypeOID: 25, DataTypeSize: -1, TypeModifier: -1,
}}}

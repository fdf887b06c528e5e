package pgwire

import (
	"encoding/binary"
	"errors"

	"github.com/jackc/pgx/v5/pgproto3"
)

// ErrMalformedDataRow is what ParseDataRow returns for a DataRow body whose
// lengths do not add up.
var ErrMalformedDataRow = errors.New("malformed DataRow")

// CopyMessage copies a decoded message: pgproto3 reuses its buffers on the
// next Receive.
func CopyMessage(m pgproto3.FrontendMessage) pgproto3.FrontendMessage {
	switch v := m.(type) {
	case *pgproto3.Parse:
		c := *v
		c.ParameterOIDs = append([]uint32(nil), v.ParameterOIDs...)
		return &c
	case *pgproto3.Bind:
		c := *v
		c.ParameterFormatCodes = append([]int16(nil), v.ParameterFormatCodes...)
		c.ResultFormatCodes = append([]int16(nil), v.ResultFormatCodes...)
		c.Parameters = make([][]byte, len(v.Parameters))
		for i, p := range v.Parameters {
			if p != nil {
				c.Parameters[i] = append([]byte{}, p...)
			}
		}
		return &c
	case *pgproto3.Describe:
		c := *v
		return &c
	case *pgproto3.Execute:
		c := *v
		return &c
	case *pgproto3.Close:
		c := *v
		return &c
	}
	return m
}

// CopyRowDescription copies a decoded RowDescription, whose field names
// alias the reader's buffer.
func CopyRowDescription(d *pgproto3.RowDescription) *pgproto3.RowDescription {
	out := &pgproto3.RowDescription{Fields: make([]pgproto3.FieldDescription, len(d.Fields))}
	for i, f := range d.Fields {
		f.Name = append([]byte(nil), f.Name...)
		out.Fields[i] = f
	}
	return out
}

// ParseDataRow splits a DataRow body into column values (nil for NULL),
// copying it: the reader's buffer is reused by the next read.
func ParseDataRow(body []byte) ([][]byte, error) {
	if len(body) < 2 {
		return nil, ErrMalformedDataRow
	}
	n := int(binary.BigEndian.Uint16(body))
	buf := append([]byte(nil), body[2:]...)
	row := make([][]byte, n)
	pos := 0
	for i := 0; i < n; i++ {
		if pos+4 > len(buf) {
			return nil, ErrMalformedDataRow
		}
		l := int(int32(binary.BigEndian.Uint32(buf[pos:])))
		pos += 4
		if l < 0 {
			continue
		}
		if pos+l > len(buf) {
			return nil, ErrMalformedDataRow
		}
		row[i] = buf[pos : pos+l : pos+l]
		pos += l
	}
	return row, nil
}

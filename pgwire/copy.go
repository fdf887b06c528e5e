package pgwire

import (
	"encoding/binary"
	"errors"

	"github.com/jackc/pgx/v5/pgproto3"
)

// ErrMalformedDataRow is what ParseDataRow returns for a DataRow body whose
// lengths do not add up.
var ErrMalformedDataRow = errors.New("malformed DataRow")

// MessageCopier copies decoded extended-protocol messages (pgproto3 reuses
// its own on the next Receive) into storage it hands out again after
// Reset, once the copies are no longer used: a session's messages between
// two Syncs. What the copies' user may keep beyond Reset is allocated
// afresh: a Parse's parameter types and a Bind's parameter values (in one
// allocation per Bind); strings are immutable and shared.
type MessageCopier struct {
	parse    slab[pgproto3.Parse]
	bind     slab[pgproto3.Bind]
	describe slab[pgproto3.Describe]
	execute  slab[pgproto3.Execute]
	close    slab[pgproto3.Close]
}

// emptyParam is a zero-length parameter that is not NULL.
var emptyParam = make([]byte, 0)

// Copy copies m; other messages than those above are returned as they are.
func (c *MessageCopier) Copy(m pgproto3.FrontendMessage) pgproto3.FrontendMessage {
	switch v := m.(type) {
	case *pgproto3.Parse:
		p := c.parse.next()
		*p = *v
		p.ParameterOIDs = append([]uint32(nil), v.ParameterOIDs...)
		return p
	case *pgproto3.Bind:
		p := c.bind.next()
		params, pf, rf := p.Parameters[:0], p.ParameterFormatCodes[:0], p.ResultFormatCodes[:0]
		*p = *v
		p.ParameterFormatCodes = append(pf, v.ParameterFormatCodes...)
		p.ResultFormatCodes = append(rf, v.ResultFormatCodes...)
		size := 0
		for _, x := range v.Parameters {
			size += len(x)
		}
		var data []byte
		if size > 0 {
			data = make([]byte, 0, size)
		}
		for _, x := range v.Parameters {
			switch {
			case x == nil:
				params = append(params, nil)
			case len(x) == 0:
				params = append(params, emptyParam[:0:0])
			default:
				from := len(data)
				data = append(data, x...)
				params = append(params, data[from:len(data):len(data)])
			}
		}
		p.Parameters = params
		return p
	case *pgproto3.Describe:
		p := c.describe.next()
		*p = *v
		return p
	case *pgproto3.Execute:
		p := c.execute.next()
		*p = *v
		return p
	case *pgproto3.Close:
		p := c.close.next()
		*p = *v
		return p
	}
	return m
}

// Reset makes every copy's storage free for the next ones: the caller
// no longer uses them.
func (c *MessageCopier) Reset() {
	c.parse.used, c.bind.used, c.describe.used, c.execute.used, c.close.used = 0, 0, 0, 0, 0
}

// slab hands out reused values of T.
type slab[T any] struct {
	items []*T
	used  int
}

func (s *slab[T]) next() *T {
	if s.used == len(s.items) {
		s.items = append(s.items, new(T))
	}
	s.used++
	return s.items[s.used-1]
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

package pgcopy

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The binary format (copyfromparse.c: the file header and CopyReadBinaryAttribute).

// setBinaryField records field number fieldno if the key needs it.
func (s *Scanner) setBinaryField(fieldno int, f Field) {
	for i, p := range s.cfg.KeyPos {
		if p == fieldno {
			s.fields[i] = f
		}
	}
}

// binarySignature starts every binary COPY stream.
var binarySignature = []byte("PGCOPY\n\xff\r\n\x00")

// nextBinary returns the binary file header, then one tuple at a time,
// then the trailer.
func (s *Scanner) nextBinary(final bool) (*Row, error) {
	b := s.buf[s.start:]
	r := &s.row
	if !s.headerDone {
		n, err := BinaryHeaderLen(b, final)
		if err != nil || n == 0 {
			return nil, err
		}
		s.headerDone = true
		*r = Row{Kind: RowHeader, Data: s.consume(n)}
		return r, nil
	}
	if s.done {
		if len(b) > 0 {
			return nil, s.dataErr("received copy data after EOF marker", "")
		}
		return nil, nil
	}
	if len(b) < 2 {
		// Postgres takes a stream that ends within a field count for the
		// end of the data.
		if final {
			s.start = len(s.buf)
		}
		return nil, nil
	}
	count := int16(binary.BigEndian.Uint16(b))
	if count == -1 {
		s.done = true
		*r = Row{Kind: RowTrailer, Data: s.consume(2)}
		return r, nil
	}
	line := s.line + 1
	if s.cfg.Columns > 0 && int(count) != s.cfg.Columns {
		return nil, &DataError{Code: "22P04", Message: fmt.Sprintf("row field count is %d, expected %d", count, s.cfg.Columns), Line: line}
	}
	pos := 2
	for f := 0; f < int(count); f++ {
		if pos+4 > len(b) {
			return s.binaryShort(final, line)
		}
		size := int32(binary.BigEndian.Uint32(b[pos:]))
		pos += 4
		if size == -1 {
			s.setBinaryField(f, Field{Null: true})
			continue
		}
		if size < 0 {
			return nil, &DataError{Code: "22P04", Message: "invalid field size", Line: line}
		}
		if pos+int(size) > len(b) {
			if pos+int(size) > maxRow {
				return nil, &DataError{Code: "54000", Message: "COPY row is longer than 1 GB", Line: line}
			}
			return s.binaryShort(final, line)
		}
		s.setBinaryField(f, Field{Value: b[pos : pos+int(size)]})
		pos += int(size)
	}
	if int(count) <= s.maxKeyPos() {
		s.line = line - 1
		return nil, s.missingField(int(count))
	}
	s.line = line
	*r = Row{Kind: RowData, Data: s.consume(pos), Line: line, Lines: 1, Fields: s.fields}
	return r, nil
}

func (s *Scanner) binaryShort(final bool, line int64) (*Row, error) {
	if final {
		return nil, &DataError{Code: "22P04", Message: "unexpected EOF in COPY data", Line: line}
	}
	return nil, nil
}

// BinaryHeaderLen checks the binary file header at the start of b and
// returns its length, or 0 if b does not hold all of it yet.
func BinaryHeaderLen(b []byte, final bool) (int, error) {
	bad := func(msg string) error { return &DataError{Code: "22P04", Message: msg} }
	if len(b) < len(binarySignature) {
		if final || !bytes.HasPrefix(binarySignature, b) {
			return 0, bad("COPY file signature not recognized")
		}
		return 0, nil
	}
	if !bytes.Equal(b[:len(binarySignature)], binarySignature) {
		return 0, bad("COPY file signature not recognized")
	}
	pos := len(binarySignature)
	if len(b) < pos+4 {
		if final {
			return 0, bad("invalid COPY file header (missing flags)")
		}
		return 0, nil
	}
	flags := binary.BigEndian.Uint32(b[pos:])
	if flags&(1<<16) != 0 {
		return 0, bad("invalid COPY file header (WITH OIDS)")
	}
	if (flags&^(1<<16))>>16 != 0 {
		return 0, bad("unrecognized critical flags in COPY file header")
	}
	pos += 4
	if len(b) < pos+4 {
		if final {
			return 0, bad("invalid COPY file header (missing length)")
		}
		return 0, nil
	}
	ext := int32(binary.BigEndian.Uint32(b[pos:]))
	if ext < 0 {
		return 0, bad("invalid COPY file header (missing length)")
	}
	pos += 4
	if len(b) < pos+int(ext) {
		if final {
			return 0, bad("invalid COPY file header (wrong length)")
		}
		return 0, nil
	}
	return pos + int(ext), nil
}

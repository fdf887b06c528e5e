package proxy

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/shardgate/shardgate/planner"
)

// The COPY FROM STDIN row scanners: they cut the client's data stream into
// rows exactly where Postgres would (copyfromparse.c: CopyReadLineText,
// CopyReadAttributesText, CopyReadAttributesCSV, the binary header and
// tuple readers), and decode just the fields that make up the shard key.
// Every row is forwarded byte for byte, so the shards parse it themselves
// and report anything the scanner does not check (types of other columns,
// field counts, encodings).
//
// The stream arrives in CopyData messages of any size: a message may hold
// many rows or part of one. The scanner keeps the unfinished tail of the
// stream, and the state of the row being scanned, between messages, so a
// row that spans many messages is scanned once; memory is bounded by the
// longest row, not by the input.

// maxCopyRow bounds one row (Postgres's own line buffer limit is 1 GB).
const maxCopyRow = 1 << 30

type eolType uint8

const (
	eolUnknown eolType = iota
	eolNL
	eolCR
	eolCRNL
)

// scanConfig is what a scanner needs to know about the COPY.
type scanConfig struct {
	format planner.CopyFormat
	delim  byte
	quote  byte // csv
	escape byte // csv
	null   string
	// dflt is the DEFAULT marker (hasDflt: one was given).
	dflt    string
	hasDflt bool
	header  bool
	// keyPos are the 0-based positions, among the COPY's columns, of the
	// fields to decode; names are their column names (for messages).
	keyPos []int
	names  []string
	// forceNotNull and forceNull apply csv's FORCE_NOT_NULL / FORCE_NULL
	// to the fields of keyPos.
	forceNotNull []bool
	forceNull    []bool
	// columns is the number of columns of the COPY, checked against a
	// binary tuple's field count; 0 skips the check.
	columns int
}

// rowKind says what a scanned piece of the stream is.
type rowKind uint8

const (
	rowData    rowKind = iota
	rowHeader          // the header line (HEADER) or the binary file header: every cluster needs it
	rowTrailer         // the binary trailer: every cluster gets one
)

// copyField is one decoded key field.
type copyField struct {
	value []byte // valid until the scanner's next call
	null  bool
	dflt  bool // the field is the DEFAULT marker
}

// copyRow is one row of the stream.
type copyRow struct {
	kind rowKind
	// data is the row as received, line end included; valid until the
	// next feed.
	data []byte
	// line is the line number Postgres reports for the row (its cur_lineno
	// once the row is read): rows count from 1, the header counts, a csv
	// row with quoted line breaks counts each; a binary tuple is one line.
	line int64
	// lines is how many lines the row advances the count (1, or more for
	// csv quoted line breaks).
	lines  int
	fields []copyField // one per scanConfig.keyPos (rowData only)
}

// copyDataError is a malformed row: SQLSTATE 22P04 (bad_copy_file_format)
// or 22P02, with the line Postgres would name.
type copyDataError struct {
	code    string
	message string
	hint    string
	line    int64
	column  string // "" when the error is about the line
}

func (e *copyDataError) Error() string {
	return fmt.Sprintf("line %d: %s (SQLSTATE %s)", e.line, e.message, e.code)
}

// copyScanner splits a COPY data stream into rows.
type copyScanner struct {
	cfg scanConfig

	// buf[start:] is the unconsumed input: the current row onward. Between
	// feeds it lives in own; a fed message is scanned in place (aliased)
	// until its unfinished tail is copied out.
	buf     []byte
	own     []byte
	aliased bool
	start   int

	// State of the text/csv row being scanned, relative to its start.
	off        int
	inQuote    bool
	lastWasEsc bool
	extra      int // csv: quoted line breaks so far

	eol        eolType
	line       int64
	headerDone bool
	done       bool  // end of data seen (\. or the binary trailer)
	err        error // sticky

	row     copyRow
	fields  []copyField
	spans   [][2]int // where in scratch each key field's value lies
	scratch []byte
}

func newCopyScanner(cfg scanConfig) *copyScanner {
	return &copyScanner{cfg: cfg, fields: make([]copyField, len(cfg.keyPos)), spans: make([][2]int, len(cfg.keyPos))}
}

// feed adds the next piece of the stream. Rows from the previous piece
// must have been consumed (next returned nil) before.
func (s *copyScanner) feed(p []byte) {
	if s.err != nil || len(p) == 0 {
		return
	}
	if s.done {
		if s.cfg.format == planner.CopyBinary {
			s.err = s.dataErr("received copy data after EOF marker", "")
		}
		return // text and csv: Postgres ignores everything after \.
	}
	if len(s.own) == 0 {
		s.buf, s.start, s.aliased = p, 0, true
		return
	}
	if len(s.own)+len(p) > maxCopyRow {
		s.err = &copyDataError{code: "54000", message: "COPY row is longer than 1 GB", line: s.line + 1}
		return
	}
	s.own = append(s.own, p...)
	s.buf, s.start, s.aliased = s.own, 0, false
}

// next returns the next complete row, or nil when the input so far holds
// none. final says the stream has ended (CopyDone): the unfinished tail is
// then the last row, or an error. The row is valid until the next feed.
func (s *copyScanner) next(final bool) (*copyRow, error) {
	if s.err != nil {
		return nil, s.err
	}
	var r *copyRow
	var err error
	if s.cfg.format == planner.CopyBinary {
		r, err = s.nextBinary(final)
	} else {
		r, err = s.nextText(final)
	}
	if err != nil {
		s.err = err
		return nil, err
	}
	if r == nil {
		s.keep()
	}
	return r, nil
}

// keep moves the unconsumed tail into the scanner's own storage: a fed
// message's buffer belongs to the caller.
func (s *copyScanner) keep() {
	rem := s.buf[s.start:]
	switch {
	case s.aliased:
		s.own = append(s.own[:0], rem...)
	case s.start > 0:
		s.own = s.own[:copy(s.own, rem)]
	}
	s.buf, s.start, s.aliased = s.own, 0, false
	if s.done {
		s.own, s.buf = s.own[:0], nil
	}
}

// dataErr is an error in the line being read; Postgres has counted its
// quoted line breaks so far.
func (s *copyScanner) dataErr(msg, hint string) *copyDataError {
	return &copyDataError{code: "22P04", message: msg, hint: hint, line: s.line + 1 + int64(s.extra)}
}

// consume ends the current row at n bytes from its start.
func (s *copyScanner) consume(n int) []byte {
	data := s.buf[s.start : s.start+n]
	s.start += n
	s.off, s.inQuote, s.lastWasEsc, s.extra = 0, false, false, 0
	return data
}

// nextText finds the next line of a text or csv stream
// (CopyReadLineText) and decodes its key fields.
func (s *copyScanner) nextText(final bool) (*copyRow, error) {
	if s.done {
		return nil, nil
	}
	content, total, marker, found, err := s.scanLine(final)
	if err != nil {
		return nil, err
	}
	if !found {
		b := s.buf[s.start:]
		if !final || len(b) == 0 {
			if len(b) > maxCopyRow {
				return nil, &copyDataError{code: "54000", message: "COPY row is longer than 1 GB", line: s.line + 1}
			}
			return nil, nil
		}
		// The last line, without a line end.
		content, total = len(b), len(b)
	}
	lines := 1 + s.extra
	if marker {
		s.done = true
		if content == 0 {
			s.start = len(s.buf)
			return nil, nil
		}
		total = content // the data before \. is the last row
	}
	data := s.consume(total)
	s.line += int64(lines)
	r := &s.row
	*r = copyRow{kind: rowData, data: data, line: s.line, lines: lines}
	if s.cfg.header && !s.headerDone {
		s.headerDone = true
		r.kind = rowHeader
		return r, nil
	}
	if len(s.cfg.keyPos) > 0 {
		var err error
		if s.cfg.format == planner.CopyCSV {
			err = s.csvFields(data[:content])
		} else {
			err = s.textFields(data[:content])
		}
		if err != nil {
			return nil, err
		}
		r.fields = s.fields
	}
	return r, nil
}

// scanLine looks for the end of the current line, resuming where the last
// call stopped. content is the length of the line without its line end,
// total with it; marker says the line holds the end-of-data marker \.
// (content is then the data before it).
func (s *copyScanner) scanLine(final bool) (content, total int, marker, found bool, err error) {
	b := s.buf[s.start:]
	csv := s.cfg.format == planner.CopyCSV
	quote, escape := s.cfg.quote, s.cfg.escape
	if escape == quote {
		escape = 0 // Postgres ignores the escape here when it is the quote
	}
	// at returns the byte at j, '\x00' past the end at the end of the
	// stream (Postgres pads its buffer so), and ok false when it must
	// wait for more input.
	at := func(j int) (byte, bool) {
		if j < len(b) {
			return b[j], true
		}
		return 0, final
	}
	i := s.off
	for i < len(b) {
		c := b[i]
		// Characters that need lookahead wait for it before any state
		// changes, so the scan can resume at them.
		if c == '\r' || (c == '\\' && (!csv || i == 0)) {
			need := 1
			if c == '\\' && i+1 < len(b) && b[i+1] == '.' {
				need = 2
				if s.eol == eolCRNL {
					need = 3
				}
			}
			if i+need >= len(b) && !final {
				break
			}
		}
		if csv {
			if s.inQuote && c == escape {
				s.lastWasEsc = !s.lastWasEsc
			}
			if c == quote && !s.lastWasEsc {
				s.inQuote = !s.inQuote
			}
			if c != escape {
				s.lastWasEsc = false
			}
			counted := byte('\r')
			if s.eol == eolNL {
				counted = '\n'
			}
			if s.inQuote && c == counted {
				s.extra++
			}
		}
		if c == '\r' && (!csv || !s.inQuote) {
			switch s.eol {
			case eolUnknown, eolCRNL:
				if c2, _ := at(i + 1); c2 == '\n' {
					s.eol = eolCRNL
					return i, i + 2, false, true, nil
				}
				if s.eol == eolCRNL {
					return 0, 0, false, false, s.crError(csv)
				}
				s.eol = eolCR
			case eolNL:
				return 0, 0, false, false, s.crError(csv)
			}
			return i, i + 1, false, true, nil
		}
		if c == '\n' && (!csv || !s.inQuote) {
			if s.eol == eolCR || s.eol == eolCRNL {
				if csv {
					return 0, 0, false, false, s.dataErr("unquoted newline found in data", "Use quoted CSV field to represent newline.")
				}
				return 0, 0, false, false, s.dataErr("literal newline found in data", `Use "\n" to represent newline.`)
			}
			s.eol = eolNL
			return i, i + 1, false, true, nil
		}
		if c == '\\' && (!csv || i == 0) {
			c2, _ := at(i + 1)
			if i+1 >= len(b) {
				break // end of the stream: the line ends here
			}
			if c2 == '.' {
				j := i + 2
				notMarker := false
				if s.eol == eolCRNL {
					c3, _ := at(j)
					j++
					switch {
					case c3 == '\n' && !csv:
						return 0, 0, false, false, s.dataErr("end-of-copy marker does not match previous newline style", "")
					case c3 != '\r' && !csv:
						return 0, 0, false, false, s.dataErr("end-of-copy marker corrupt", "")
					case c3 != '\r':
						notMarker = true
					}
				}
				if !notMarker {
					c3, _ := at(j)
					j++
					switch {
					case c3 != '\r' && c3 != '\n' && !csv:
						return 0, 0, false, false, s.dataErr("end-of-copy marker corrupt", "")
					case c3 != '\r' && c3 != '\n':
						notMarker = true
					case s.eol == eolNL && c3 != '\n', s.eol == eolCRNL && c3 != '\n', s.eol == eolCR && c3 != '\r':
						return 0, 0, false, false, s.dataErr("end-of-copy marker does not match previous newline style", "")
					}
				}
				if !notMarker {
					return i, i, true, true, nil
				}
				// csv: \. followed by data is data; Postgres goes on
				// right after the backslash (NO_END_OF_COPY_GOTO).
				i++
				continue
			}
			if !csv {
				i += 2 // a backslash quotes the next character, line ends included
				continue
			}
		}
		i++
	}
	if i > len(b) {
		i = len(b)
	}
	s.off = i
	return 0, 0, false, false, nil
}

func (s *copyScanner) crError(csv bool) error {
	if csv {
		return s.dataErr("unquoted carriage return found in data", "Use quoted CSV field to represent carriage return.")
	}
	return s.dataErr("literal carriage return found in data", `Use "\r" to represent carriage return.`)
}

// maxKeyPos is the last field position the key needs.
func (s *copyScanner) maxKeyPos() int {
	m := -1
	for _, p := range s.cfg.keyPos {
		if p > m {
			m = p
		}
	}
	return m
}

// setBinaryField records field number fieldno if the key needs it.
func (s *copyScanner) setBinaryField(fieldno int, f copyField) {
	for i, p := range s.cfg.keyPos {
		if p == fieldno {
			s.fields[i] = f
		}
	}
}

func (s *copyScanner) wanted(fieldno int) bool {
	for _, p := range s.cfg.keyPos {
		if p == fieldno {
			return true
		}
	}
	return false
}

// missingField reports the first key field the line lacks.
func (s *copyScanner) missingField(fields int) error {
	for i, p := range s.cfg.keyPos {
		if p >= fields {
			e := s.dataErr(fmt.Sprintf("missing data for column \"%s\"", s.cfg.names[i]), "")
			e.line = s.line
			e.column = s.cfg.names[i]
			return e
		}
	}
	return nil
}

// textFields splits a text-format line (CopyReadAttributesText) up to the
// last key field and decodes the key fields.
func (s *copyScanner) textFields(line []byte) error {
	last := s.maxKeyPos()
	s.scratch = s.scratch[:0]
	delim := s.cfg.delim
	cur, fieldno := 0, 0
	for fieldno <= last {
		start, outStart := cur, len(s.scratch)
		want := s.wanted(fieldno)
		foundDelim := false
		end := cur
		for {
			end = cur
			if cur >= len(line) {
				break
			}
			c := line[cur]
			cur++
			if c == delim {
				foundDelim = true
				break
			}
			if c == '\\' {
				if cur >= len(line) {
					break // a backslash ending the line is dropped
				}
				c = line[cur]
				cur++
				switch {
				case c >= '0' && c <= '7':
					val := int(c - '0')
					if cur < len(line) && line[cur] >= '0' && line[cur] <= '7' {
						val = val<<3 + int(line[cur]-'0')
						cur++
						if cur < len(line) && line[cur] >= '0' && line[cur] <= '7' {
							val = val<<3 + int(line[cur]-'0')
							cur++
						}
					}
					c = byte(val & 0o377)
				case c == 'x':
					if cur < len(line) && isHexDigit(line[cur]) {
						val := hexValue(line[cur])
						cur++
						if cur < len(line) && isHexDigit(line[cur]) {
							val = val<<4 + hexValue(line[cur])
							cur++
						}
						c = byte(val & 0xff)
					}
				case c == 'b':
					c = '\b'
				case c == 'f':
					c = '\f'
				case c == 'n':
					c = '\n'
				case c == 'r':
					c = '\r'
				case c == 't':
					c = '\t'
				case c == 'v':
					c = '\v'
				}
			}
			if want {
				s.scratch = append(s.scratch, c)
			}
		}
		if want {
			raw := line[start:end]
			var f copyField
			switch {
			case string(raw) == s.cfg.null:
				f.null = true
			case s.cfg.hasDflt && string(raw) == s.cfg.dflt:
				f.dflt = true
			}
			s.setKeyField(fieldno, f, outStart, len(s.scratch))
		}
		fieldno++
		if !foundDelim {
			break
		}
	}
	if fieldno <= last {
		return s.missingField(fieldno)
	}
	s.resolveValues()
	return nil
}

func isHexDigit(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}

// setKeyField records a decoded key field whose value is scratch[from:to]
// (resolved by resolveValues once scratch stops growing).
func (s *copyScanner) setKeyField(fieldno int, f copyField, from, to int) {
	for i, p := range s.cfg.keyPos {
		if p == fieldno {
			s.fields[i] = f
			s.spans[i] = [2]int{from, to}
		}
	}
}

func (s *copyScanner) resolveValues() {
	for i := range s.fields {
		if s.fields[i].null || s.fields[i].dflt {
			s.fields[i].value = nil
			continue
		}
		s.fields[i].value = s.scratch[s.spans[i][0]:s.spans[i][1]]
	}
}

// csvFields splits a csv line (CopyReadAttributesCSV) up to the last key
// field and decodes the key fields, applying FORCE_NOT_NULL and
// FORCE_NULL as NextCopyFrom does.
func (s *copyScanner) csvFields(line []byte) error {
	last := s.maxKeyPos()
	s.scratch = s.scratch[:0]
	delim, quote, escape := s.cfg.delim, s.cfg.quote, s.cfg.escape
	cur, fieldno := 0, 0
	for fieldno <= last {
		start, outStart := cur, len(s.scratch)
		want := s.wanted(fieldno)
		foundDelim, sawQuote := false, false
		end := cur
	field:
		for {
			// Not in quote.
			for {
				end = cur
				if cur >= len(line) {
					break field
				}
				c := line[cur]
				cur++
				if c == delim {
					foundDelim = true
					break field
				}
				if c == quote {
					sawQuote = true
					break
				}
				if want {
					s.scratch = append(s.scratch, c)
				}
			}
			// In quote.
			for {
				end = cur
				if cur >= len(line) {
					e := s.dataErr("unterminated CSV quoted field", "")
					e.line = s.line
					return e
				}
				c := line[cur]
				cur++
				if c == escape && cur < len(line) {
					if next := line[cur]; next == escape || next == quote {
						if want {
							s.scratch = append(s.scratch, next)
						}
						cur++
						continue
					}
				}
				if c == quote {
					break
				}
				if want {
					s.scratch = append(s.scratch, c)
				}
			}
		}
		if want {
			raw := line[start:end]
			var f copyField
			switch {
			case !sawQuote && string(raw) == s.cfg.null:
				f.null = true
			case s.cfg.hasDflt && string(raw) == s.cfg.dflt:
				f.dflt = true
			}
			for i, p := range s.cfg.keyPos {
				if p != fieldno {
					continue
				}
				switch {
				case f.null && s.cfg.forceNotNull[i]:
					// FORCE_NOT_NULL: the null string itself.
					f.null = false
					s.scratch = append(s.scratch[:outStart], s.cfg.null...)
				case !f.null && !f.dflt && s.cfg.forceNull[i] && string(s.scratch[outStart:]) == s.cfg.null:
					f.null = true
				}
			}
			s.setKeyField(fieldno, f, outStart, len(s.scratch))
		}
		fieldno++
		if !foundDelim {
			break
		}
	}
	if fieldno <= last {
		return s.missingField(fieldno)
	}
	s.resolveValues()
	return nil
}

// binarySignature starts every binary COPY stream.
var binarySignature = []byte("PGCOPY\n\xff\r\n\x00")

// nextBinary returns the binary file header, then one tuple at a time,
// then the trailer.
func (s *copyScanner) nextBinary(final bool) (*copyRow, error) {
	b := s.buf[s.start:]
	r := &s.row
	if !s.headerDone {
		n, err := binaryHeaderLen(b, final)
		if err != nil || n == 0 {
			return nil, err
		}
		s.headerDone = true
		*r = copyRow{kind: rowHeader, data: s.consume(n)}
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
		*r = copyRow{kind: rowTrailer, data: s.consume(2)}
		return r, nil
	}
	line := s.line + 1
	if s.cfg.columns > 0 && int(count) != s.cfg.columns {
		return nil, &copyDataError{code: "22P04", message: fmt.Sprintf("row field count is %d, expected %d", count, s.cfg.columns), line: line}
	}
	pos := 2
	for f := 0; f < int(count); f++ {
		if pos+4 > len(b) {
			return s.binaryShort(final, line)
		}
		size := int32(binary.BigEndian.Uint32(b[pos:]))
		pos += 4
		if size == -1 {
			s.setBinaryField(f, copyField{null: true})
			continue
		}
		if size < 0 {
			return nil, &copyDataError{code: "22P04", message: "invalid field size", line: line}
		}
		if pos+int(size) > len(b) {
			if pos+int(size) > maxCopyRow {
				return nil, &copyDataError{code: "54000", message: "COPY row is longer than 1 GB", line: line}
			}
			return s.binaryShort(final, line)
		}
		s.setBinaryField(f, copyField{value: b[pos : pos+int(size)]})
		pos += int(size)
	}
	if int(count) <= s.maxKeyPos() {
		s.line = line - 1
		return nil, s.missingField(int(count))
	}
	s.line = line
	*r = copyRow{kind: rowData, data: s.consume(pos), line: line, lines: 1, fields: s.fields}
	return r, nil
}

func (s *copyScanner) binaryShort(final bool, line int64) (*copyRow, error) {
	if final {
		return nil, &copyDataError{code: "22P04", message: "unexpected EOF in COPY data", line: line}
	}
	return nil, nil
}

// binaryHeaderLen checks the binary file header at the start of b and
// returns its length, or 0 if b does not hold all of it yet.
func binaryHeaderLen(b []byte, final bool) (int, error) {
	bad := func(msg string) error { return &copyDataError{code: "22P04", message: msg} }
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

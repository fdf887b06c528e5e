package pgcopy

import (
	"fmt"
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

// maxRow bounds one row (Postgres's own line buffer limit is 1 GB).
const maxRow = 1 << 30

type eolType uint8

const (
	eolUnknown eolType = iota
	eolNL
	eolCR
	eolCRNL
)

// Format is a COPY data format.
type Format uint8

// The COPY formats.
const (
	Text Format = iota
	CSV
	Binary
)

// String names the format as COPY's FORMAT option does.
func (f Format) String() string {
	switch f {
	case CSV:
		return "csv"
	case Binary:
		return "binary"
	}
	return "text"
}

// Config is what a scanner needs to know about the COPY.
type Config struct {
	Format Format
	Delim  byte   // the field delimiter (text, csv)
	Quote  byte   // csv
	Escape byte   // csv
	Null   string // the NULL marker
	// Default is the DEFAULT marker (HasDefault: one was given).
	Default    string
	HasDefault bool
	Header     bool // the first line is a header (text, csv)
	// KeyPos are the 0-based positions, among the COPY's columns, of the
	// fields to decode; Names are their column names (for messages).
	KeyPos []int
	Names  []string
	// ForceNotNull and ForceNull apply csv's FORCE_NOT_NULL / FORCE_NULL
	// to the fields of KeyPos.
	ForceNotNull []bool
	ForceNull    []bool
	// Columns is the number of columns of the COPY, checked against a
	// binary tuple's field count; 0 skips the check.
	Columns int
}

// RowKind says what a scanned piece of the stream is.
type RowKind uint8

// The kinds of rows.
const (
	RowData    RowKind = iota // a row of data
	RowHeader                 // the header line (HEADER) or the binary file header: every cluster needs it
	RowTrailer                // the binary trailer: every cluster gets one
)

// Field is one decoded key field.
type Field struct {
	Value   []byte // valid until the scanner's next call
	Null    bool   // the field is NULL (the NULL marker; csv: unquoted, or FORCE_NULL)
	Default bool   // the field is the DEFAULT marker
}

// Row is one row of the stream.
type Row struct {
	Kind RowKind
	// Data is the row as received, line end included; valid until the
	// next Feed.
	Data []byte
	// Line is the line number Postgres reports for the row (its cur_lineno
	// once the row is read): rows count from 1, the header counts, a csv
	// row with quoted line breaks counts each; a binary tuple is one line.
	Line int64
	// Lines is how many lines the row advances the count (1, or more for
	// csv quoted line breaks).
	Lines  int
	Fields []Field // one per Config.KeyPos (RowData only)
}

// DataError is a malformed row: SQLSTATE 22P04 (bad_copy_file_format)
// or 22P02, with the line Postgres would name.
type DataError struct {
	Code    string // the SQLSTATE
	Message string // Postgres's message for the error
	Hint    string // Postgres's hint, if any
	Line    int64  // the line Postgres would name
	Column  string // "" when the error is about the line
}

// Error describes the error with its line.
func (e *DataError) Error() string {
	return fmt.Sprintf("line %d: %s (SQLSTATE %s)", e.Line, e.Message, e.Code)
}

// Scanner splits a COPY data stream into rows.
type Scanner struct {
	cfg Config

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

	row     Row
	fields  []Field
	spans   [][2]int // where in scratch each key field's value lies
	scratch []byte
}

// NewScanner returns a scanner of a stream in cfg's format.
func NewScanner(cfg Config) *Scanner {
	return &Scanner{cfg: cfg, fields: make([]Field, len(cfg.KeyPos)), spans: make([][2]int, len(cfg.KeyPos))}
}

// Feed adds the next piece of the stream. Rows from the previous piece
// must have been consumed (Next returned nil) before.
func (s *Scanner) Feed(p []byte) {
	if s.err != nil || len(p) == 0 {
		return
	}
	if s.done {
		if s.cfg.Format == Binary {
			s.err = s.dataErr("received copy data after EOF marker", "")
		}
		return // text and csv: Postgres ignores everything after \.
	}
	if len(s.own) == 0 {
		s.buf, s.start, s.aliased = p, 0, true
		return
	}
	if len(s.own)+len(p) > maxRow {
		s.err = &DataError{Code: "54000", Message: "COPY row is longer than 1 GB", Line: s.line + 1}
		return
	}
	s.own = append(s.own, p...)
	s.buf, s.start, s.aliased = s.own, 0, false
}

// Next returns the Next complete row, or nil when the input so far holds
// none. final says the stream has ended (CopyDone): the unfinished tail is
// then the last row, or an error. The row is valid until the Next feed.
func (s *Scanner) Next(final bool) (*Row, error) {
	if s.err != nil {
		return nil, s.err
	}
	var r *Row
	var err error
	if s.cfg.Format == Binary {
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
func (s *Scanner) keep() {
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
func (s *Scanner) dataErr(msg, hint string) *DataError {
	return &DataError{Code: "22P04", Message: msg, Hint: hint, Line: s.line + 1 + int64(s.extra)}
}

// consume ends the current row at n bytes from its start.
func (s *Scanner) consume(n int) []byte {
	data := s.buf[s.start : s.start+n]
	s.start += n
	s.off, s.inQuote, s.lastWasEsc, s.extra = 0, false, false, 0
	return data
}

// nextText finds the next line of a text or csv stream
// (CopyReadLineText) and decodes its key fields.
func (s *Scanner) nextText(final bool) (*Row, error) {
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
			if len(b) > maxRow {
				return nil, &DataError{Code: "54000", Message: "COPY row is longer than 1 GB", Line: s.line + 1}
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
	*r = Row{Kind: RowData, Data: data, Line: s.line, Lines: lines}
	if s.cfg.Header && !s.headerDone {
		s.headerDone = true
		r.Kind = RowHeader
		return r, nil
	}
	if len(s.cfg.KeyPos) > 0 {
		var err error
		if s.cfg.Format == CSV {
			err = s.csvFields(data[:content])
		} else {
			err = s.textFields(data[:content])
		}
		if err != nil {
			return nil, err
		}
		r.Fields = s.fields
	}
	return r, nil
}

// scanLine looks for the end of the current line, resuming where the last
// call stopped. content is the length of the line without its line end,
// total with it; marker says the line holds the end-of-data marker \.
// (content is then the data before it).
func (s *Scanner) scanLine(final bool) (content, total int, marker, found bool, err error) {
	b := s.buf[s.start:]
	csv := s.cfg.Format == CSV
	quote, escape := s.cfg.Quote, s.cfg.Escape
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

func (s *Scanner) crError(csv bool) error {
	if csv {
		return s.dataErr("unquoted carriage return found in data", "Use quoted CSV field to represent carriage return.")
	}
	return s.dataErr("literal carriage return found in data", `Use "\r" to represent carriage return.`)
}

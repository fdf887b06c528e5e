package pgcopy

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/sqlerr"
)

// FieldError is a row whose key field the caller could not use: no key,
// a value that does not convert, no shard for it.
type FieldError struct {
	Line   int64  // the row's line
	Column string // the key column, "" when the error is about the row
	Value  []byte // the field's value, nil when not shown
	Err    error  // what went wrong, with its SQLSTATE
}

// Error is the underlying error's.
func (e *FieldError) Error() string { return e.Err.Error() }

// RowError turns a *DataError or a *FieldError into the error Postgres
// would report: the line of the input in the message and in a CONTEXT
// ("COPY table, line n, column c: value"). Other errors pass unchanged.
func RowError(table string, err error) error {
	pe := &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR"}
	var line int64
	var column string
	var value []byte
	switch e := err.(type) {
	case *DataError:
		pe.Code, pe.Message, pe.Hint = e.Code, e.Message, e.Hint
		line, column = e.Line, e.Column
	case *FieldError:
		line, column, value = e.Line, e.Column, e.Value
		if se, ok := sqlerr.As(e.Err); ok {
			pe.Code, pe.Message, pe.Detail, pe.Hint = se.Code, se.Message, se.Detail, se.Hint
		} else {
			pe.Code, pe.Message = sqlerr.Code(e.Err), e.Err.Error()
		}
	default:
		return err
	}
	pe.Where = fmt.Sprintf("COPY %s, line %d", table, line)
	if column != "" {
		pe.Where += ", column " + column
		if value != nil {
			pe.Where += ": " + strconv.Quote(string(value))
		}
	}
	pe.Message = fmt.Sprintf("COPY %s, line %d: %s", table, line, pe.Message)
	return pe
}

// copyLineRE finds the line number in a backend's COPY context.
var copyLineRE = regexp.MustCompile(`^COPY (.+?), line (\d+)`)

// FixLine makes a cluster's error during COPY name the line of the
// client's stream, in its CONTEXT and in front of its message: the
// cluster counts only the lines it received, which m maps back (nil: the
// cluster received every line, as for a reference table). When the line
// has left m's window, the CONTEXT says so instead.
func FixLine(e *pgproto3.ErrorResponse, m *LineMap, cluster string) {
	loc := copyLineRE.FindStringSubmatchIndex(e.Where)
	if loc == nil {
		return
	}
	shardLine, err := strconv.ParseInt(e.Where[loc[4]:loc[5]], 10, 64)
	if err != nil {
		return
	}
	line, known := shardLine, true
	if m != nil {
		line, known = m.Lookup(shardLine)
	}
	if !known {
		e.Where += fmt.Sprintf("\nshardgate: line %d of the rows cluster %s received; its line in the input is no longer known", shardLine, cluster)
		return
	}
	e.Where = e.Where[:loc[4]] + strconv.FormatInt(line, 10) + e.Where[loc[5]:]
	e.Message = "COPY " + e.Where[loc[2]:loc[3]] + ", line " + strconv.FormatInt(line, 10) + ": " + e.Message
}

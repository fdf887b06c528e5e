package sqlerr

import (
	"errors"
	"fmt"
)

// SQLSTATE codes used across shardgate. The names are Postgres's condition
// names (Appendix A, "PostgreSQL Error Codes") in Go spelling; add a code
// here when a layer needs it rather than spelling the literal.
const (
	FeatureNotSupported          = "0A000"
	ConnectionFailure            = "08006"
	TransactionResolutionUnknown = "08007"
	ProtocolViolation            = "08P01"
	NumericValueOutOfRange       = "22003"
	NullValueNotAllowed          = "22004"
	SubstringError               = "22011"
	CharacterNotInRepertoire     = "22021"
	InvalidParameterValue        = "22023"
	InvalidTextRepresentation    = "22P02"
	NotNullViolation             = "23502"
	UniqueViolation              = "23505"
	CheckViolation               = "23514"
	InvalidTransactionState      = "25000"
	InFailedSQLTransaction       = "25P02"
	InvalidAuthorizationSpec     = "28000"
	InvalidPassword              = "28P01"
	SerializationFailure         = "40001"
	InsufficientPrivilege        = "42501"
	SyntaxError                  = "42601"
	UndefinedColumn              = "42703"
	CannotCoerce                 = "42846"
	UndefinedFunction            = "42883"
	UndefinedTable               = "42P01"
	UndefinedObject              = "42704"
	ConfigurationLimitExceeded   = "53400"
	TooManyConnections           = "53300"
	ObjectNotInPrerequisiteState = "55000"
	LockNotAvailable             = "55P03"
	QueryCanceled                = "57014"
	AdminShutdown                = "57P01"
	ConfigFileError              = "F0000"
	InternalError                = "XX000"
)

// Error is an error with a Postgres SQLSTATE and the fields of an
// ErrorResponse that shardgate itself fills in. Message is the primary,
// human-readable text, written the way Postgres writes its own messages
// (lower case, no final period).
type Error struct {
	Code    string // five-character SQLSTATE, e.g. "22P02"
	Message string
	Detail  string // optional secondary text
	Hint    string // optional suggestion
}

// New returns an *Error with the given SQLSTATE and a message formatted
// like fmt.Sprintf.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error returns the message followed by the SQLSTATE, e.g.
// `invalid input syntax for type bigint: "abc" (SQLSTATE 22P02)`, which is
// how pgconn prints backend errors too.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (SQLSTATE %s)", e.Message, e.Code)
}

// SQLState returns the code. Having this method lets Code read any error
// that follows the same convention, such as pgconn's *PgError.
func (e *Error) SQLState() string { return e.Code }

// WithDetail returns a copy of e with Detail set.
func (e *Error) WithDetail(format string, args ...any) *Error {
	c := *e
	c.Detail = fmt.Sprintf(format, args...)
	return &c
}

// WithHint returns a copy of e with Hint set.
func (e *Error) WithHint(format string, args ...any) *Error {
	c := *e
	c.Hint = fmt.Sprintf(format, args...)
	return &c
}

// sqlStater is satisfied by *Error and by other packages' error types that
// carry a SQLSTATE (pgconn.PgError among them).
type sqlStater interface {
	SQLState() string
}

// Code returns the SQLSTATE carried by err or by any error it wraps. It
// returns "" for a nil error and InternalError ("XX000") for an error that
// carries no SQLSTATE, so a caller that must answer a client always has a
// code to send.
func Code(err error) string {
	if err == nil {
		return ""
	}
	var s sqlStater
	if errors.As(err, &s) {
		if c := s.SQLState(); c != "" {
			return c
		}
	}
	return InternalError
}

// As returns the first *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

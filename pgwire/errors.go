package pgwire

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/sqlerr"
)

// BackendError is an ErrorResponse from a backend, kept whole, with the
// cluster (and shards) that sent it.
type BackendError struct {
	Resp    pgproto3.ErrorResponse // every field the backend sent
	Cluster string                 // the cluster that sent it
	Shards  []string               // the shards the statement ran for, if known
}

// Error describes the error with its cluster.
func (e *BackendError) Error() string {
	return fmt.Sprintf("%s: %s (SQLSTATE %s) on cluster %s", e.Resp.Severity, e.Resp.Message, e.Resp.Code, e.Cluster)
}

// SQLState reports the backend's code.
func (e *BackendError) SQLState() string { return e.Resp.Code }

// NewBackendError decodes an ErrorResponse body a backend of cluster sent
// (for shards, when the statement ran on known shards).
func NewBackendError(body []byte, cluster string, shards []string) error {
	e := &BackendError{Cluster: cluster, Shards: shards}
	if err := e.Resp.Decode(body); err != nil {
		return sqlerr.New("08P01", "cluster %s sent a malformed error: %v", cluster, err)
	}
	// Decode aliases the body; keep our own copies of the strings' bytes.
	e.Resp = cloneErrorResponse(e.Resp)
	return e
}

// cloneErrorResponse copies the map a decoded ErrorResponse shares.
func cloneErrorResponse(r pgproto3.ErrorResponse) pgproto3.ErrorResponse {
	if r.UnknownFields != nil {
		m := make(map[byte]string, len(r.UnknownFields))
		for k, v := range r.UnknownFields {
			m[k] = v
		}
		r.UnknownFields = m
	}
	return r
}

// ErrorResponse is the message that reports err to a client: a backend
// error with every field intact plus a where line naming its cluster and
// shards, a *pgconn.PgError field by field, a sqlerr error with its
// SQLSTATE and severity, anything else as XX000.
func ErrorResponse(err error, severity string) *pgproto3.ErrorResponse {
	var be *BackendError
	if errors.As(err, &be) {
		r := be.Resp
		where := fmt.Sprintf("shardgate: cluster %s", be.Cluster)
		if len(be.Shards) > 0 {
			where += ", shard " + strings.Join(be.Shards, ", ")
		}
		if r.Where == "" {
			r.Where = where
		} else {
			r.Where += "\n" + where
		}
		return &r
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &pgproto3.ErrorResponse{
			Severity: pe.Severity, SeverityUnlocalized: pe.SeverityUnlocalized, Code: pe.Code, Message: pe.Message,
			Detail: pe.Detail, Hint: pe.Hint, Position: pe.Position, InternalPosition: pe.InternalPosition,
			InternalQuery: pe.InternalQuery, Where: pe.Where, SchemaName: pe.SchemaName, TableName: pe.TableName,
			ColumnName: pe.ColumnName, DataTypeName: pe.DataTypeName, ConstraintName: pe.ConstraintName,
			File: pe.File, Line: pe.Line, Routine: pe.Routine,
		}
	}
	var se *sqlerr.Error
	if errors.As(err, &se) {
		return &pgproto3.ErrorResponse{
			Severity: severity, SeverityUnlocalized: severity, Code: se.Code, Message: se.Message,
			Detail: se.Detail, Hint: se.Hint,
		}
	}
	return &pgproto3.ErrorResponse{Severity: severity, SeverityUnlocalized: severity, Code: "XX000", Message: err.Error()}
}

// ErrCode is the SQLSTATE of any error the proxy handles.
func ErrCode(err error) string {
	var be *BackendError
	if errors.As(err, &be) {
		return be.Resp.Code
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return sqlerr.Code(err)
}

// ErrMessage is the message of any error the proxy handles, without its
// SQLSTATE or cluster.
func ErrMessage(err error) string {
	if pe, ok := err.(*pgconn.PgError); ok {
		return pe.Message
	}
	if be, ok := err.(*BackendError); ok {
		return be.Resp.Message
	}
	if se, ok := sqlerr.As(err); ok {
		return se.Message
	}
	return err.Error()
}

// ConnLost wraps an I/O failure on a backend connection.
func ConnLost(cluster string, err error) error {
	return sqlerr.New("08006", "lost connection to cluster %s: %v", cluster, err)
}

// PgErrorFrom turns a decoded ErrorResponse into a *pgconn.PgError.
func PgErrorFrom(e *pgproto3.ErrorResponse) *pgconn.PgError {
	return &pgconn.PgError{
		Severity: e.Severity, SeverityUnlocalized: e.SeverityUnlocalized,
		Code: e.Code, Message: e.Message, Detail: e.Detail, Hint: e.Hint,
		Position: e.Position, InternalPosition: e.InternalPosition, InternalQuery: e.InternalQuery,
		Where: e.Where, SchemaName: e.SchemaName, TableName: e.TableName, ColumnName: e.ColumnName,
		DataTypeName: e.DataTypeName, ConstraintName: e.ConstraintName, File: e.File, Line: e.Line, Routine: e.Routine,
	}
}

// Annotate attaches the cluster to a *pgconn.PgError (as the backend
// connection's own statements return them); other errors pass unchanged.
func Annotate(err error, cluster string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &BackendError{Resp: *ErrorResponse(pe, "ERROR"), Cluster: cluster}
	}
	return err
}

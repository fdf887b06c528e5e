package proxy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/sqlerr"
)

// backendError is an ErrorResponse from a backend, kept whole, with the
// cluster (and shards) that sent it.
type backendError struct {
	resp    pgproto3.ErrorResponse
	cluster string
	shards  []string
}

func (e *backendError) Error() string {
	return fmt.Sprintf("%s: %s (SQLSTATE %s) on cluster %s", e.resp.Severity, e.resp.Message, e.resp.Code, e.cluster)
}

// SQLState reports the backend's code.
func (e *backendError) SQLState() string { return e.resp.Code }

func newBackendError(body []byte, cluster string, shards []string) error {
	e := &backendError{cluster: cluster, shards: shards}
	if err := e.resp.Decode(body); err != nil {
		return sqlerr.New("08P01", "cluster %s sent a malformed error: %v", cluster, err)
	}
	// Decode aliases the body; keep our own copies of the strings' bytes.
	e.resp = cloneErrorResponse(e.resp)
	return e
}

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

// sendError writes an ErrorResponse for err: backend errors with every field
// intact plus where they came from; proxy errors with their SQLSTATE.
func (ss *session) sendError(err error) error {
	return ss.send(errorResponse(err, "ERROR"))
}

func (ss *session) sendFatal(err error) error {
	if err := ss.send(errorResponse(err, "FATAL")); err != nil {
		return err
	}
	return ss.out.Flush()
}

func errorResponse(err error, severity string) *pgproto3.ErrorResponse {
	var be *backendError
	if errors.As(err, &be) {
		r := be.resp
		where := fmt.Sprintf("shardgate: cluster %s", be.cluster)
		if len(be.shards) > 0 {
			where += ", shard " + strings.Join(be.shards, ", ")
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

// errCode is the SQLSTATE of any error the proxy handles.
func errCode(err error) string {
	var be *backendError
	if errors.As(err, &be) {
		return be.resp.Code
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return sqlerr.Code(err)
}

// connLost wraps an I/O failure on a backend connection.
func connLost(cluster string, err error) error {
	return sqlerr.New("08006", "lost connection to cluster %s: %v", cluster, err)
}

package proxy

import (
	"bytes"
	"encoding/binary"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// Postgres fixes a prepared statement's result when it is parsed: once DDL
// changes it (ALTER TABLE ... DROP COLUMN under SELECT *), Bind and Describe
// of the statement fail with 0A000 "cached plan must not change result
// type" until the client prepares it again. A client statement lives on
// several backend connections; on one where it was prepared before the DDL
// the backend says so itself, but on one where the proxy parses it anew it
// would silently take the new result (or fail the Bind's result formats
// with 08P01). So the proxy remembers the result the client was described
// with and, before binding a statement parsed anew on a connection,
// describes it there and compares (recheck).

// resultShape is the result a client statement was described with: its
// columns' names, types and type modifiers, or none (NoData). known is
// false until the client's first Describe of the statement.
type resultShape struct {
	known   bool
	cluster string // where it was described
	cols    []shapeCol
}

type shapeCol struct {
	name   string
	oid    uint32
	typmod int32
}

// firstNormalOID is Postgres' FirstNormalObjectId: types below it are
// built in, with the same OID on every cluster; a user type (an enum, a
// domain) has an OID of each cluster's own.
const firstNormalOID = 16384

// shapeOf reads a Describe's answer: RowDescription ('T') or NoData ('n').
// ok is false for a malformed RowDescription.
func shapeOf(typ byte, body []byte) (cols []shapeCol, ok bool) {
	if typ == 'n' {
		return nil, true
	}
	if len(body) < 2 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint16(body))
	body = body[2:]
	cols = make([]shapeCol, 0, n)
	for i := 0; i < n; i++ {
		end := bytes.IndexByte(body, 0)
		if end < 0 || len(body) < end+1+18 {
			return nil, false
		}
		f := body[end+1:]
		cols = append(cols, shapeCol{name: string(body[:end]), oid: binary.BigEndian.Uint32(f[6:]), typmod: int32(binary.BigEndian.Uint32(f[12:]))})
		body = f[18:]
	}
	return cols, true
}

// note records the shape of a Describe's answer relayed to the client, once.
func (s *resultShape) note(cluster string, typ byte, body []byte) {
	if s.known {
		return
	}
	if cols, ok := shapeOf(typ, body); ok {
		*s = resultShape{known: true, cluster: cluster, cols: cols}
	}
}

// same reports whether a Describe's answer on cluster has the shape s: the
// same columns, names, type modifiers and types (user types' OIDs compared
// only on the cluster s was described on).
func (s *resultShape) same(cluster string, typ byte, body []byte) bool {
	cols, ok := shapeOf(typ, body)
	if !ok || len(cols) != len(s.cols) || (typ == 'n') != (s.cols == nil) {
		return false
	}
	for i, c := range cols {
		w := s.cols[i]
		if c.name != w.name || c.typmod != w.typmod {
			return false
		}
		if c.oid != w.oid && (cluster == s.cluster || c.oid < firstNormalOID || w.oid < firstNormalOID) {
			return false
		}
	}
	return true
}

// fixedResult reports whether Postgres fixes the result of a prepared
// statement of kind: a query (revalidated against DDL), not a utility
// statement such as FETCH, whose result is that of the cursor it names
// when it runs.
func fixedResult(kind planner.StmtKind) bool {
	switch kind {
	case planner.Select, planner.Insert, planner.Update, planner.Delete, planner.Merge:
		return true
	}
	return false
}

// errResultChanged is Postgres' answer to Bind or Describe of a prepared
// statement whose result DDL changed.
func errResultChanged() error {
	return sqlerr.New("0A000", "cached plan must not change result type")
}

// recheck runs when st, already described to the client, has just been
// parsed anew on b (as name): it describes it there, reading what the batch
// sent before first, and compares with what the client was described. On a
// difference the batch fails with 0A000; the fresh statement is closed on b
// and b's transaction made to fail as the client's does (an Execute of a
// portal that does not exist), so that b's implicit transaction rolls back
// what the batch ran on it before, as Postgres' does after an error. ok is
// false when the batch failed (this or an earlier error); forget, on a
// difference, drops b's record of the fresh statement.
func (bt *batch) recheck(b *backend.Conn, st *clientStmt, name string, forget func()) (ok bool) {
	if !st.shape.known || !fixedResult(st.plan.Kind) {
		return true
	}
	if err := b.SendDescribe('S', name); err != nil {
		bt.fail(pgwire.ConnLost(b.Cluster(), err))
		return false
	}
	changed := false
	bt.queue = append(bt.queue, &expect{exec: func() {
		ss := bt.ss
		if b.Broken || ss.errored[b] {
			return // the Parse failed: reported
		}
		for {
			m, err := b.Read()
			if err != nil {
				bt.stepFailed(pgwire.ConnLost(b.Cluster(), err))
				return
			}
			switch m.Type {
			case 'E':
				ss.markErrored(b)
				bt.stepFailed(pgwire.NewBackendError(m.Body, b.Cluster(), nil))
				return
			case 'T', 'n':
				if changed = !st.shape.same(b.Cluster(), m.Type, m.Body); changed {
					bt.stepFailed(errResultChanged())
				}
				return
			}
		}
	}})
	bt.flushBackends()
	bt.drain()
	if changed {
		forget()
		_ = b.Send(&pgproto3.Close{ObjectType: 'S', Name: name})
		_ = b.Send(&pgproto3.Execute{Portal: "sg-result-changed"})
		bt.queue = append(bt.queue, &expect{conns: []*backend.Conn{b}, until: "3"}, &expect{conns: []*backend.Conn{b}, until: "C"})
	}
	return !bt.dropping
}

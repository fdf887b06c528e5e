package backend

import (
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"
)

// StatementKey identifies a statement on backend connections. gen is the
// client statement's number (the proxy's statement sequence): a client that re-prepares after
// DDL ("cached plan must not change result type") gets a fresh backend
// statement, never a stale one of its own or of another session.
func StatementKey(sql string, oids []uint32, gen int) string {
	k := make([]byte, 0, len(sql)+12+6*len(oids))
	k = append(k, sql...)
	if gen > 0 {
		k = append(k, "\x00g"...)
		k = strconv.AppendInt(k, int64(gen), 10)
	}
	for _, o := range oids {
		k = append(k, 0)
		k = strconv.AppendUint(k, uint64(o), 10)
	}
	return string(k)
}

// NextName returns a fresh name of the proxy's on b: prefix and b's next
// statement number (EvictOldest reads that number back from "sg" names).
func (b *Conn) NextName(prefix string) string {
	b.NextStmt++
	return prefix + strconv.Itoa(b.NextStmt)
}

// SendParseAs sends Parse of sql under a fresh name of the proxy's and
// records the name in b.Prepared under key; a caller that reads an error
// for the Parse deletes key again.
func (b *Conn) SendParseAs(key, sql string, oids []uint32) string {
	name := b.NextName("sg")
	_ = b.Send(&pgproto3.Parse{Name: name, Query: sql, ParameterOIDs: oids})
	b.Prepared[key] = name
	return name
}

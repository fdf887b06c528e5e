package backend

import "strconv"

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

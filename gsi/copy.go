package gsi

import (
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/vschema"
)

// CopyEntries collects the entries of the rows a COPY FROM copies into an
// owner table (package copyroute reads each row's key and indexed values
// as it routes the row) and writes them once the COPY has ended on every
// cluster, in the same transaction: a connection in COPY mode runs
// nothing else, and a lookup shard's cluster is one of the owner's. The
// entries are held in memory until then (a key and the values per row).
type CopyEntries struct {
	owner *vschema.Table
	rows  []row
}

// NewCopyEntries collects the entries of rows copied into owner.
func NewCopyEntries(owner *vschema.Table) *CopyEntries { return &CopyEntries{owner: owner} }

// Add records one copied row: its key and its value of each of the
// owner's indexes, in their order (nil: NULL), as text.
func (c *CopyEntries) Add(key string, values []*string) {
	vals := make([][]byte, 0, 1+len(values))
	vals = append(vals, []byte(key))
	for _, v := range values {
		if v == nil {
			vals = append(vals, nil)
		} else {
			vals = append(vals, []byte(*v))
		}
	}
	c.rows = append(c.rows, row{stmtRow: -1, values: vals})
}

// Write writes the entries of the copied rows to the lookup shards, on
// the session's transaction: a unique index's duplicate is its 23505, a
// NULL value of an index that does not ignore NULLs 23502.
func (c *CopyEntries) Write(s Session) error {
	if c.owner == nil || len(c.rows) == 0 {
		return nil
	}
	return maintain(s, c.owner, planner.GSIInsert, c.rows, 1+len(c.owner.SecondaryIndexes))
}

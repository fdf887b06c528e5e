package gsi

import (
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// Pending is the lookup-table work of one client transaction under
// commit: best_effort, in the consistent-lookup order: the entries a
// statement writes go to a transaction of their own on each lookup
// cluster (the "pre" transactions, on connections outside the client's
// transaction), committed before the owner's clusters (Commit); the
// entries of owner rows deleted or updated away stay until the owner has
// committed, then each is removed if its owner row no longer has the
// value (Settle). So a committed owner row always has its entry, and an
// entry may be dangling (its owner write rolled back or failed to
// commit, or its removal failed): harmless, since a read through the
// index reads the owner rows with the index's condition, and a unique
// index's write takes a dangling entry over.
//
// An entry's writer holds a shared advisory lock on the owner's cluster,
// keyed by the index, the value and the key (ownerLockSQL), in the client's
// transaction from before its entry commits until its owner commits or
// rolls back. Whoever decides that an entry is dangling (a unique
// index's takeover, Settle, verify) first locks the entry on its lookup
// cluster, then takes that lock exclusively on the owner's cluster: an
// owner write whose entry is committed has then committed or rolled
// back, and the owner rows read next are the truth.
type Pending struct {
	spare func(cluster string) (*backend.Conn, error)
	pre   map[string]*backend.Conn
	order []string
	held  map[heldKey]bool // (index, value, key) locked shared by this transaction
	post  []removal
}

type heldKey struct {
	si         *vschema.SecondaryIndex
	value, key string
}

// removal is the entries to settle on a lookup cluster once the owner
// committed.
type removal struct {
	si      *vschema.SecondaryIndex
	cluster string
	es      *entries
}

// NewPending returns the work of a transaction, which takes connections
// outside the client's transaction from pools (a value on stop ends a
// wait).
func NewPending(pools map[string]*backend.Pool, stop chan struct{}) *Pending {
	spare := func(cluster string) (*backend.Conn, error) {
		if pools[cluster] == nil {
			return nil, sqlerr.New(sqlerr.InternalError, "cluster %q is not in the topology", cluster)
		}
		return pools[cluster].AcquireUntil(stop)
	}
	return &Pending{spare: spare, pre: map[string]*backend.Conn{}, held: map[heldKey]bool{}}
}

// BestEffort is a Session whose transaction commits best effort: its
// lookup-table work is Pending's.
type BestEffort interface {
	Pending() *Pending
}

func pendingOf(s any) *Pending {
	if b, ok := s.(BestEffort); ok {
		return b.Pending()
	}
	return nil
}

// LookupConn is the pre transaction's connection to cluster (nil: none),
// on which the transaction's own reads through an index see the entries
// it wrote.
func (p *Pending) LookupConn(cluster string) *backend.Conn {
	if p == nil {
		return nil
	}
	return p.pre[cluster]
}

func (p *Pending) preConn(cluster string) (*backend.Conn, error) {
	if b := p.pre[cluster]; b != nil {
		return b, nil
	}
	b, err := p.spare(cluster)
	if err != nil {
		return nil, err
	}
	if err := b.SimpleExec("BEGIN", nil); err != nil {
		b.Release()
		return nil, pgwire.ConnLost(cluster, err)
	}
	p.pre[cluster] = b
	p.order = append(p.order, cluster)
	return b, nil
}

// Commit commits the pre transactions, before the owner's clusters; an
// error means the client's transaction must roll back (entries committed
// on other lookup clusters are then dangling).
func (p *Pending) Commit() error {
	var first error
	for _, c := range p.order {
		b := p.pre[c]
		verb := "COMMIT"
		if first != nil {
			verb = "ROLLBACK"
		}
		if err := b.SimpleExec(verb, nil); err != nil && first == nil {
			first = b.ClusterErr(err)
		}
		b.Release()
	}
	p.pre, p.order = map[string]*backend.Conn{}, nil
	return first
}

// End ends the transaction's lookup work around end, which ends the
// client's transaction on the owners' clusters: rolled back, the pre
// transactions too; committed, the pre transactions first (their
// failure rolls the client's back), then the owners', then Settle (whose
// failure leaves dangling entries).
func (p *Pending) End(commit bool, end func(commit bool) error) error {
	if !commit {
		p.Rollback()
		return end(false)
	}
	if err := p.Commit(); err != nil {
		_ = end(false)
		return err
	}
	if err := end(true); err != nil {
		return err
	}
	_ = p.Settle()
	return nil
}

// Rollback rolls the pre transactions back: the client's transaction
// did not commit.
func (p *Pending) Rollback() {
	for _, c := range p.order {
		_ = p.pre[c].SimpleExec("ROLLBACK", nil)
		p.pre[c].Release()
	}
	p.pre, p.order, p.post = map[string]*backend.Conn{}, nil, nil
}

// Settle removes, once the owner's transaction has committed, the
// entries of the owner rows it deleted or updated away, each only if no
// owner row has it any more (a non-unique entry is set to the owner rows'
// count). An error leaves entries dangling; it is returned for the log.
func (p *Pending) Settle() error {
	post := p.post
	p.post = nil
	var first error
	for _, r := range post {
		for _, e := range r.es.list {
			if err := p.settleOne(r.si, r.cluster, e.value, e.key); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// settleOne settles one entry on lookup cluster l in a transaction of its
// own.
func (p *Pending) settleOne(si *vschema.SecondaryIndex, l, value, key string) error {
	b, err := p.spare(l)
	if err != nil {
		return err
	}
	defer b.Release()
	if err := b.SimpleExec("BEGIN", nil); err != nil {
		return pgwire.ConnLost(l, err)
	}
	err = func() error {
		rows, err := b.Query(entrySQL(si, value, key) + " FOR UPDATE")
		if err != nil || len(rows) == 0 {
			return err
		}
		n, err := ownerCount(nil, p.spare, si, value, key)
		if err != nil {
			return err
		}
		return b.SimpleExec(setCountSQL(si, value, key, n), nil)
	}()
	verb := "COMMIT"
	if err != nil {
		verb = "ROLLBACK"
	}
	if e := b.SimpleExec(verb, nil); err == nil {
		err = e
	}
	return b.ClusterErr(err)
}

// write does the work of maintainOnly for one index and lookup cluster c
// under best effort.
func (p *Pending) write(s Session, si *vschema.SecondaryIndex, op planner.GSIOp, c string, es *entries) error {
	if op == planner.GSIDelete {
		if err := p.lockOwners(s, si, es); err != nil {
			return err
		}
		p.post = append(p.post, removal{si: si, cluster: c, es: es})
		return nil
	}
	if si.Unique {
		if e := es.repeated(); e != nil {
			return duplicate(si, e.value)
		}
	}
	b, err := p.preConn(c)
	if err != nil {
		return err
	}
	for _, part := range es.chunks(maxEntries) {
		if !si.Unique {
			if err := b.SimpleExec(insertSQL(si, part), nil); err != nil {
				return b.ClusterErr(err)
			}
			continue
		}
		rows, err := b.Query(takenSQL(si, part))
		if err != nil {
			return b.ClusterErr(err)
		}
		for _, r := range rows {
			var i int
			_, _ = fmt.Sscan(string(r[0]), &i)
			if err := p.takeOver(s, b, si, part.list[i]); err != nil {
				return err
			}
		}
	}
	return p.lockOwners(s, si, es)
}

// takeOver settles a unique index's value that another entry holds (the
// pre transaction's INSERT found it): locked, the entry's owner row is
// read; if it has the value, the write is the index's duplicate (23505),
// otherwise the entry is dangling and now names e's key.
func (p *Pending) takeOver(s Session, b *backend.Conn, si *vschema.SecondaryIndex, e *entry) error {
	for try := 0; try < 3; try++ {
		rows, err := b.Query(entrySQL(si, e.value, "") + " FOR UPDATE")
		if err != nil {
			return b.ClusterErr(err)
		}
		if len(rows) == 0 { // removed meanwhile: insert it
			rows, err := b.Query(takenSQL(si, &entries{list: []*entry{e}}))
			if err != nil {
				return b.ClusterErr(err)
			}
			if len(rows) == 0 {
				return nil
			}
			continue
		}
		had := string(rows[0][0])
		var own func(string) (*backend.Conn, error)
		if p.held[heldKey{si, e.value, had}] {
			own = s.Conn // this transaction wrote or removed that owner row itself
		}
		n, err := ownerCount(own, p.spare, si, e.value, had)
		if err != nil {
			return err
		}
		if own != nil && had == e.key {
			n-- // the row this statement wrote
		}
		if n > 0 {
			return duplicate(si, e.value)
		}
		if had != e.key {
			if err := b.SimpleExec(setKeySQL(si, e.value, e.key), nil); err != nil {
				return b.ClusterErr(err)
			}
		}
		return nil
	}
	return sqlerr.New(sqlerr.SerializationFailure, "could not write the entry of global secondary index %s: its value is being written concurrently", si.Name).
		WithHint("Retry the transaction.")
}

// lockOwners takes the shared advisory locks of the entries on their
// owners' clusters, in the client's transaction.
func (p *Pending) lockOwners(s Session, si *vschema.SecondaryIndex, es *entries) error {
	byOwner := map[string]*entries{}
	var order []string
	for _, e := range es.list {
		c, err := ownerCluster(si, e.key)
		if err != nil {
			return err
		}
		if byOwner[c] == nil {
			byOwner[c] = &entries{}
			order = append(order, c)
		}
		byOwner[c].list = append(byOwner[c].list, e)
	}
	for _, c := range order {
		b, err := s.Conn(c)
		if err != nil {
			return err
		}
		if err := b.SimpleExec(ownerLockSQL(si, byOwner[c], true), nil); err != nil {
			return b.ClusterErr(err)
		}
		for _, e := range byOwner[c].list {
			p.held[heldKey{si, e.value, e.key}] = true
		}
	}
	return nil
}

// ownerCluster is the cluster of the owner rows of key.
func ownerCluster(si *vschema.SecondaryIndex, key string) (string, error) {
	return si.Table.ClusterOfRow(func(col string) (keyexpr.Value, bool) {
		return keyexpr.Text(key), col == si.KeyColumn()
	})
}

// ownerCount counts the owner rows of key with value. own, when set, is
// the client transaction's connection (which holds the entry's lock and
// sees its own writes); otherwise a spare connection takes the entry's
// lock exclusively first, waiting for the owner writes in flight.
func ownerCount(own, spare func(string) (*backend.Conn, error), si *vschema.SecondaryIndex, value, key string) (int, error) {
	c, err := ownerCluster(si, key)
	if err != nil {
		return 0, err
	}
	q := fmt.Sprintf("SELECT count(*) FROM %s WHERE %s = %s AND (%s) = %s", ownerName(si.Table),
		pgwire.QuoteIdent(si.KeyColumn()), literal(key, si.KeyType()), si.Source(""), literal(value, si.Type))
	var rows [][][]byte
	if own != nil {
		b, err := own(c)
		if err != nil {
			return 0, err
		}
		if rows, err = b.Query(q); err != nil {
			return 0, b.ClusterErr(err)
		}
	} else {
		b, err := spare(c)
		if err != nil {
			return 0, err
		}
		defer b.Release()
		es := &entries{list: []*entry{{value: value, key: key}}}
		rows, err = b.Query("BEGIN; SET LOCAL lock_timeout = '10s'; " + ownerLockSQL(si, es, false) + "; " + q + "; COMMIT")
		if err != nil {
			_ = b.SimpleExec("ROLLBACK", nil)
			return 0, sqlerr.New(sqlerr.SerializationFailure, "could not check the owner row of an entry of global secondary index %s: %v", si.Name, b.ClusterErr(err)).
				WithHint("Retry the transaction.")
		}
	}
	var n int
	if len(rows) > 0 {
		_, _ = fmt.Sscan(string(rows[len(rows)-1][0]), &n)
	}
	return n, nil
}

// ownerLockSQL takes the advisory locks of the entries (in the transaction):
// shared by a writer, exclusive by whoever checks the owner rows. The key
// is a hash of the index name and the value and key as Postgres prints
// them, so two texts of one value (01 and 1) lock the same.
func ownerLockSQL(si *vschema.SecondaryIndex, es *entries, shared bool) string {
	fn := "pg_advisory_xact_lock"
	if shared {
		fn += "_shared"
	}
	return fmt.Sprintf("SELECT count(%s(hashtextextended(format('%%s|%%s|%%s', %s, d.v::text, d.k::text), 0))) FROM (VALUES %s) AS d(v, k)",
		fn, pgwire.QuoteLiteral(si.Name), es.rows(si, false))
}

// takenSQL inserts a unique index's entries where their value is free and
// answers the positions (in es) of those whose value an entry holds.
func takenSQL(si *vschema.SecondaryIndex, es *entries) string {
	parts := make([]string, len(es.list))
	for i, e := range es.list {
		parts[i] = fmt.Sprintf("(%s, %s, %d)", literal(e.value, si.Type), literal(e.key, si.KeyType()), i)
	}
	v, k := pgwire.QuoteIdent(si.Column), pgwire.QuoteIdent(si.KeyColumn())
	return fmt.Sprintf("WITH d(v, k, i) AS (VALUES %s), ins AS (INSERT INTO %s (%s, %s) SELECT v, k FROM d ON CONFLICT DO NOTHING RETURNING %s) SELECT i FROM d WHERE v NOT IN (SELECT %s FROM ins) ORDER BY i",
		strings.Join(parts, ", "), tableName(si), v, k, v, v)
}

// entrySQL reads the key of a value's entry (key "": a unique index's
// entry of the value, whatever its key).
func entrySQL(si *vschema.SecondaryIndex, value, key string) string {
	v, k := pgwire.QuoteIdent(si.Column), pgwire.QuoteIdent(si.KeyColumn())
	q := fmt.Sprintf("SELECT %s::text FROM %s WHERE %s = %s", k, tableName(si), v, literal(value, si.Type))
	if key != "" {
		q += fmt.Sprintf(" AND %s = %s", k, literal(key, si.KeyType()))
	}
	return q
}

// setKeySQL points a unique index's entry of value at key.
func setKeySQL(si *vschema.SecondaryIndex, value, key string) string {
	return fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s = %s", tableName(si), pgwire.QuoteIdent(si.KeyColumn()),
		literal(key, si.KeyType()), pgwire.QuoteIdent(si.Column), literal(value, si.Type))
}

// setCountSQL makes the entry (value, key) stand for n owner rows:
// removed at 0, a non-unique index's count set otherwise.
func setCountSQL(si *vschema.SecondaryIndex, value, key string, n int) string {
	where := fmt.Sprintf("%s = %s AND %s = %s", pgwire.QuoteIdent(si.Column), literal(value, si.Type),
		pgwire.QuoteIdent(si.KeyColumn()), literal(key, si.KeyType()))
	switch {
	case n == 0:
		return fmt.Sprintf("DELETE FROM %s WHERE %s", tableName(si), where)
	case si.Unique:
		return "SELECT 1"
	}
	return fmt.Sprintf("UPDATE %s SET %s = %d WHERE %s", tableName(si), vschema.CountColumn, n, where)
}

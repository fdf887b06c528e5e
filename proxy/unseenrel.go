package proxy

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
)

// Relations that run code the statement does not show (unseen.go): a
// view, a table with a trigger of the user's, a rule, row-level security,
// a default, generated column, CHECK constraint or index expression that
// calls a function or operator outside pg_catalog, a column of a domain
// or type of the user's, a foreign table — and a table reached from one
// of those by inheritance (or partitioning) or a foreign key. Any of them
// may call set_config(..., false). A statement naming one (Plan.Relations)
// marks its connections for the check, as a DO block does.
//
// The catalog of such relations is read once per routing, from every
// cluster, lazily: the first statement that names a relation starts the
// read, and until it is in, every statement naming a relation is marked
// (checked: never wrong, one round trip more). After that a statement
// costs a map look-up per relation it names. DDL through the proxy forgets
// the catalog (afterDDL, columns.go), as it forgets column orders; inside
// a transaction that ran DDL every statement naming a relation is marked,
// and the catalog is forgotten again when the transaction ends. DDL run on
// the clusters directly is seen within a bound: a catalog whose read
// started more than Config.CodeRefresh ago (default 10s) is stale, and a
// statement that finds it stale is marked and starts the read again, as
// before the first read; the stale catalog serves no statement.

// codeRelations is a routing's catalog of relations that run code.
type codeRelations struct {
	// names is the catalog read (RelationKey keys: schema and name, and
	// the name alone); nil until read.
	names atomic.Pointer[map[string]bool]
	// gen counts the forgets: a read started before one is dropped.
	gen atomic.Uint64
	// reading is set while a read runs; failed is when the last one
	// failed (the next waits a second).
	reading atomic.Bool
	mu      sync.Mutex
	failed  time.Time
	// readAt is when the read of names started (since codeEpoch); every
	// is how long a catalog serves.
	readAt atomic.Int64
	every  time.Duration
}

// codeEpoch is the origin of codeRelations.readAt (a monotonic clock).
var codeEpoch = time.Now()

// defaultCodeRefresh is Config.CodeRefresh's default.
const defaultCodeRefresh = 10 * time.Second

// runCode says whether a statement naming rels may run code of a view,
// trigger, rule, policy or default: when one of them is in the catalog,
// or the catalog is not read yet (the read is started).
func (cr *codeRelations) runCode(r *routing, rels []string) bool {
	if len(rels) == 0 {
		return false
	}
	names := cr.names.Load()
	if names == nil || time.Since(codeEpoch)-time.Duration(cr.readAt.Load()) > cr.every {
		cr.read(r)
		return true
	}
	for _, k := range rels {
		if (*names)[k] {
			return true
		}
	}
	return false
}

// forget drops the catalog: DDL may have changed it.
func (cr *codeRelations) forget() {
	cr.gen.Add(1)
	cr.names.Store(nil)
}

// read starts reading the catalog from r's clusters unless a read runs.
func (cr *codeRelations) read(r *routing) {
	cr.mu.Lock()
	wait := time.Since(cr.failed) < time.Second
	cr.mu.Unlock()
	if wait || !cr.reading.CompareAndSwap(false, true) {
		return
	}
	gen, at := cr.gen.Load(), time.Since(codeEpoch)
	go func() {
		defer cr.reading.Store(false)
		names := map[string]bool{}
		for _, p := range r.pools {
			if err := readCodeRelations(p, names); err != nil {
				cr.mu.Lock()
				cr.failed = time.Now()
				cr.mu.Unlock()
				return
			}
		}
		if cr.gen.Load() == gen {
			cr.readAt.Store(int64(at))
			cr.names.Store(&names)
		}
	}()
}

// codeRelationsQuery lists the relations that run code (see above), in
// a transaction whose search_path is pg_catalog alone: the connection
// may carry another session's.
const codeRelationsQuery = `WITH RECURSIVE userfn(oid) AS (
	SELECT oid FROM pg_proc WHERE pronamespace <> 'pg_catalog'::regnamespace
	UNION ALL SELECT oid FROM pg_operator WHERE oprnamespace <> 'pg_catalog'::regnamespace
), calls(classid, objid) AS (
	SELECT d.classid, d.objid FROM pg_depend d JOIN userfn f ON f.oid = d.refobjid
	WHERE d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass)
), own(oid) AS (
	SELECT c.oid FROM pg_class c WHERE c.relkind IN ('v', 'f')
		AND c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
	UNION SELECT oid FROM pg_class WHERE relrowsecurity
	UNION SELECT tgrelid FROM pg_trigger WHERE NOT tgisinternal
	UNION SELECT ev_class FROM pg_rewrite WHERE rulename <> '_RETURN'
	UNION SELECT ad.adrelid FROM pg_attrdef ad JOIN calls ON calls.classid = 'pg_attrdef'::regclass AND calls.objid = ad.oid
	UNION SELECT co.conrelid FROM pg_constraint co JOIN calls ON calls.classid = 'pg_constraint'::regclass AND calls.objid = co.oid WHERE co.conrelid <> 0
	UNION SELECT i.indrelid FROM pg_index i JOIN calls ON calls.classid = 'pg_class'::regclass AND calls.objid = i.indexrelid
	UNION SELECT a.attrelid FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid JOIN pg_class c ON c.oid = a.attrelid
		WHERE a.attnum > 0 AND NOT a.attisdropped AND t.typtype <> 'e'
		AND t.typnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
		AND c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
), edges(src, dst) AS (
	SELECT inhrelid, inhparent FROM pg_inherits
	UNION ALL SELECT conrelid, confrelid FROM pg_constraint WHERE contype = 'f'
), reach(oid) AS (
	SELECT oid FROM own
	UNION SELECT e.dst FROM edges e JOIN reach ON reach.oid = e.src
)
SELECT n.nspname, c.relname FROM reach JOIN pg_class c ON c.oid = reach.oid JOIN pg_namespace n ON n.oid = c.relnamespace`

// readCodeRelations adds the relations of p's cluster that run code to
// names, over a connection of the service identity.
func readCodeRelations(p *backend.Pool, names map[string]bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer p.Release(b)
	if err := b.SimpleExec("BEGIN READ ONLY; SET LOCAL search_path = pg_catalog; SET LOCAL statement_timeout = 0", nil); err != nil {
		return err
	}
	rows, err := b.Query(codeRelationsQuery)
	if cerr := b.SimpleExec("COMMIT", nil); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, row := range rows {
		names[planner.RelationKey(string(row[0]), string(row[1]))] = true
		names[string(row[1])] = true
	}
	return nil
}

package gsi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// Options tune a backfill.
type Options struct {
	// BatchRows is the number of owner rows per batch (default 5000).
	BatchRows int
	// Logf reports what the backfill does; nil: nothing.
	Logf func(format string, args ...any)
	// Progress is called with the index's status after each batch.
	Progress func([]OwnerStatus)
	// Activate flips the verified index to active: a routing revision in
	// main that every proxy follows (package routestate), written back
	// into File when set. Off: it stays verified.
	Activate bool
	// File is the topology file to write the new state into ("": none).
	File string
	// Author names who activates, in the revision.
	Author string
}

// Backfill fills and verifies one index's lookup table from its owner
// table (doc.go says how). Open it, Run or Verify, Close.
type Backfill struct {
	si   *vschema.SecondaryIndex
	opts Options
	main *pgx.Conn
	// owner and lookup hold one connection per cluster each: a batch
	// keeps a transaction open on its owner cluster while it writes the
	// lookup clusters, which may be the same databases.
	owner, lookup map[string]*pgx.Conn
	pk            []pkColumn
}

type pkColumn struct{ name, typ string }

// lockSQL takes the backfill's lock on main, held by the connection: a
// second runner is refused, a killed one releases it.
const lockSQL = "SELECT pg_try_advisory_lock(hashtext('shardgate.gsi_backfill'), hashtext($1))"

// Open connects to main and to the index's clusters, creates the state
// tables and the lookup table where missing and reads the owner's primary
// key. run: the caller will Run it, so the runner's lock is taken (55P03
// if another process holds it).
func Open(ctx context.Context, topo *topology.Topology, name string, run bool, opts Options) (*Backfill, error) {
	vs, err := vschema.Build(topo)
	if err != nil {
		return nil, err
	}
	var si *vschema.SecondaryIndex
	for _, s := range vs.SecondaryIndexes() {
		if s.Name == name {
			si = s
		}
	}
	if si == nil {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "global secondary index %q is not in the topology", name)
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = 5000
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	b := &Backfill{si: si, opts: opts, owner: map[string]*pgx.Conn{}, lookup: map[string]*pgx.Conn{}}
	ok := false
	defer func() {
		if !ok {
			b.Close()
		}
	}()
	if b.main, err = connect(ctx, topo, topo.Main().Cluster); err != nil {
		return nil, err
	}
	if _, err := b.main.Exec(ctx, mainSchema); err != nil {
		return nil, fmt.Errorf("create shardgate.gsi_backfills on main: %w", err)
	}
	if run {
		var got bool
		if err := b.main.QueryRow(ctx, lockSQL, name).Scan(&got); err != nil {
			return nil, err
		}
		if !got {
			return nil, sqlerr.New(sqlerr.LockNotAvailable, "the backfill of %s is run by another process", name)
		}
	}
	for _, c := range si.Group.Clusters {
		for _, m := range []map[string]*pgx.Conn{b.owner, b.lookup} {
			conn, err := connect(ctx, topo, c)
			if err != nil {
				return nil, err
			}
			m[c] = conn
			// A batch waiting on a lock held by a client that waits on the
			// batch's other transaction would never end: give up and retry.
			if _, err := conn.Exec(ctx, "SET lock_timeout = '5s'"); err != nil {
				return nil, err
			}
		}
		if _, err := b.lookup[c].Exec(ctx, targetSchema+";\n"+CreateSQL(si, true)); err != nil {
			return nil, fmt.Errorf("cluster %s: create the lookup table: %w", c, err)
		}
	}
	if b.pk, err = primaryKey(ctx, b.owner[si.Group.Clusters[0]], si.Table); err != nil {
		return nil, err
	}
	ok = true
	return b, nil
}

func connect(ctx context.Context, topo *topology.Topology, cluster string) (*pgx.Conn, error) {
	c, err := pgx.Connect(ctx, topo.Cluster(cluster).DSN)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cluster, err)
	}
	return c, nil
}

// Main is the connection to the main group's cluster.
func (b *Backfill) Main() *pgx.Conn { return b.main }

// Close closes the connections (releasing the runner's lock).
func (b *Backfill) Close() {
	ctx := context.Background()
	for _, m := range []map[string]*pgx.Conn{b.owner, b.lookup} {
		for _, c := range m {
			c.Close(ctx)
		}
	}
	if b.main != nil {
		b.main.Close(ctx)
	}
}

// primaryKey reads the owner table's primary key columns and types.
func primaryKey(ctx context.Context, c *pgx.Conn, t *vschema.Table) ([]pkColumn, error) {
	rows, err := c.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod)
		FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)`, ownerName(t))
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t, err)
	}
	pk, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pkColumn, error) {
		var p pkColumn
		return p, r.Scan(&p.name, &p.typ)
	})
	if err == nil && len(pk) == 0 {
		err = sqlerr.New(sqlerr.ObjectNotInPrerequisiteState, "table %s has no primary key: the backfill reads it in primary-key order", t)
	}
	return pk, err
}

func ownerName(t *vschema.Table) string {
	return pgwire.QuoteIdent(t.Schema) + "." + pgwire.QuoteIdent(t.Name)
}

// Run copies what is left of every owner cluster, verifies (repairing
// what concurrent writes left behind), and activates the index if
// Options.Activate is set. A unique index whose owner rows repeat a value
// stops in phase duplicates.
func (b *Backfill) Run(ctx context.Context) error {
	err := b.run(ctx)
	if err != nil && ctx.Err() == nil {
		_, _ = b.main.Exec(context.Background(), `UPDATE shardgate.gsi_backfills SET phase = $2, last_error = $3, updated_at = now()
			WHERE index_name = $1 AND phase NOT IN ('active', 'duplicates')`, b.si.Name, PhaseError, err.Error())
	}
	return err
}

func (b *Backfill) run(ctx context.Context) error {
	name := b.si.Name
	for _, c := range b.si.Group.Clusters {
		var est int64
		if err := b.owner[c].QueryRow(ctx, "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = $1::regclass", ownerName(b.si.Table)).Scan(&est); err != nil {
			return err
		}
		if est == 0 {
			if err := b.owner[c].QueryRow(ctx, "SELECT count(*) FROM "+ownerName(b.si.Table)).Scan(&est); err != nil {
				return err
			}
		}
		if _, err := b.main.Exec(ctx, `INSERT INTO shardgate.gsi_backfills (index_name, owner, rows_estimate) VALUES ($1, $2, $3)
			ON CONFLICT (index_name, owner) DO UPDATE SET run_started_at = now(), run_started_rows = gsi_backfills.rows_done, last_error = '',
				phase = CASE gsi_backfills.phase WHEN 'error' THEN 'copying' WHEN 'duplicates' THEN 'copied' WHEN 'verifying' THEN 'copied'
					ELSE gsi_backfills.phase END`, name, c, est); err != nil {
			return err
		}
		if _, err := b.main.Exec(ctx, `UPDATE shardgate.gsi_backfills SET run_started_at = coalesce(run_started_at, now()) WHERE index_name = $1 AND owner = $2`, name, c); err != nil {
			return err
		}
	}
	st, err := Status(ctx, b.main, name)
	if err != nil {
		return err
	}
	for _, s := range st {
		if s.Phase == PhaseCopying {
			if err := b.copyOwner(ctx, s.Owner); err != nil {
				return err
			}
		}
	}
	if st, err = Status(ctx, b.main, name); err != nil {
		return err
	}
	switch IndexPhase(st) {
	case PhaseActive:
		b.opts.Logf("%s is active", name)
		return nil
	case PhaseVerified:
	default:
		if err := b.setPhase(ctx, PhaseVerifying, nil); err != nil {
			return err
		}
		b.opts.Logf("%s: copied; verifying", name)
		res, err := b.Verify(ctx, true)
		if err != nil {
			return err
		}
		var dups []string
		for _, r := range res {
			for _, d := range r.Diffs {
				if d.Kind == DiffDuplicate {
					dups = append(dups, d.String())
				} else {
					b.opts.Logf("%s: repaired on %s: %s", name, r.Cluster, d)
				}
			}
		}
		if len(dups) > 0 {
			if err := b.setPhase(ctx, PhaseDuplicates, dups); err != nil {
				return err
			}
			return sqlerr.New("23505", "global secondary index %s is unique but its owner rows repeat values: %s", name, strings.Join(dups, "; ")).
				WithHint("Remove the duplicates, then run the backfill again; the index stays backfilling.")
		}
		if err := b.setPhase(ctx, PhaseVerified, nil); err != nil {
			return err
		}
		b.opts.Logf("%s: verified", name)
	}
	if !b.opts.Activate {
		return nil
	}
	return b.activate(ctx)
}

func (b *Backfill) setPhase(ctx context.Context, phase string, dups []string) error {
	if dups == nil {
		dups = []string{}
	}
	_, err := b.main.Exec(ctx, `UPDATE shardgate.gsi_backfills SET phase = $2, duplicates = $3, last_error = '', updated_at = now() WHERE index_name = $1`,
		b.si.Name, phase, dups[:min(len(dups), 10)])
	return err
}

// position is a lookup cluster's batch position for one owner cluster.
type position struct {
	lastKey       []string
	rows, batches int64
}

// copyOwner copies the owner cluster's rows in primary-key batches until
// none is left.
func (b *Backfill) copyOwner(ctx context.Context, owner string) error {
	lookups := b.si.Group.Clusters
	pos := map[string]*position{}
	for _, l := range lookups {
		p := &position{}
		err := b.lookup[l].QueryRow(ctx, "SELECT last_key, rows, batches FROM shardgate.gsi_backfill_target WHERE index_name = $1 AND owner = $2",
			b.si.Name, owner).Scan(&p.lastKey, &p.rows, &p.batches)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		pos[l] = p
	}
	for {
		// The lookup clusters furthest behind get the next batch; its end
		// is the one a cluster ahead committed (after a crash), or new.
		low := int64(-1)
		for _, p := range pos {
			if low < 0 || p.batches < low {
				low = p.batches
			}
		}
		var behind []string
		var lo, hi []string
		for _, l := range lookups {
			switch p := pos[l]; p.batches {
			case low:
				behind, lo = append(behind, l), p.lastKey
			case low + 1:
				hi = p.lastKey
			}
		}
		done, err := b.batch(ctx, owner, behind, lo, hi, pos)
		for attempt := 0; err != nil && retryable(err) && attempt < 5; attempt++ {
			b.opts.Logf("%s: batch from %s retried: %v", b.si.Name, owner, err)
			time.Sleep(time.Duration(100*(attempt+1)) * time.Millisecond)
			done, err = b.batch(ctx, owner, behind, lo, hi, pos)
		}
		if err != nil {
			return err
		}
		lead := &position{}
		for _, p := range pos {
			if p.batches > lead.batches {
				lead = p
			}
		}
		phase := PhaseCopying
		if done {
			phase = PhaseCopied
		}
		if _, err := b.main.Exec(ctx, `UPDATE shardgate.gsi_backfills SET phase = $3, last_key = $4, rows_done = $5, batches = $6, updated_at = now()
			WHERE index_name = $1 AND owner = $2`, b.si.Name, owner, phase, lead.lastKey, lead.rows, lead.batches); err != nil {
			return err
		}
		if b.opts.Progress != nil {
			if st, err := Status(ctx, b.main, b.si.Name); err == nil {
				b.opts.Progress(st)
			}
		}
		if done {
			b.opts.Logf("%s: copied %d rows from %s in %d batches", b.si.Name, lead.rows, owner, lead.batches)
			return nil
		}
	}
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "55P03" || pe.Code == "40P01" || pe.Code == "40001")
}

// batch copies the owner rows after lo (and up to hi, if a lookup cluster
// already committed this batch) to the lookup clusters behind, each in
// one transaction with its new position; the rows stay locked FOR SHARE
// on the owner cluster until every lookup cluster committed. done: no row
// was left.
func (b *Backfill) batch(ctx context.Context, owner string, behind []string, lo, hi []string, pos map[string]*position) (done bool, err error) {
	si := b.si
	tx, err := b.owner[owner].Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if hi == nil {
		// The batch's end, read first: locking rows in ORDER BY ... LIMIT
		// may return a row whose key an update moved, out of order.
		q, args := b.batchSQL(lo, nil, true)
		var last []string
		switch err := tx.QueryRow(ctx, q, args...).Scan(&last); {
		case err == nil:
			hi = last
		case !errors.Is(err, pgx.ErrNoRows):
			return false, fmt.Errorf("%s on %s: %w", si.Table, owner, err)
		}
	}
	q, args := b.batchSQL(lo, hi, false)
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("%s on %s: %w", si.Table, owner, err)
	}
	type ownerRow struct {
		pk         []string
		value, key *string
	}
	read, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ownerRow, error) {
		var o ownerRow
		return o, r.Scan(&o.pk, &o.value, &o.key)
	})
	if err != nil {
		return false, fmt.Errorf("%s on %s: %w", si.Table, owner, err)
	}
	end := hi
	if end == nil {
		// Fewer rows than a batch were left: the last one read ends it.
		if len(read) == 0 {
			return true, nil
		}
		end = read[len(read)-1].pk
	}
	byCluster := map[string][]item{}
	for _, o := range read {
		if o.value == nil {
			if si.IgnoreNulls {
				continue
			}
			return false, sqlerr.New(sqlerr.NotNullViolation, "row %s of %s has a NULL %s: index %s does not ignore NULL values (ignore_nulls: false)",
				strings.Join(o.pk, ","), si.Table, si.Label(), si.Name)
		}
		l, err := clusterOf(si, *o.value)
		if err != nil {
			return false, err
		}
		byCluster[l] = append(byCluster[l], item{value: *o.value, key: *o.key})
	}
	for _, l := range behind {
		if err := b.write(ctx, owner, l, byCluster[l], end, int64(len(read))); err != nil {
			return false, err
		}
		p := pos[l]
		p.lastKey, p.rows, p.batches = end, p.rows+int64(len(read)), p.batches+1
	}
	return false, tx.Commit(ctx)
}

// batchSQL reads a batch's rows after lo and up to hi: primary key (as
// text), value and key, locked FOR SHARE for a unique index. end: only the
// primary key of the batch's last row, if there are a full batch's rows.
func (b *Backfill) batchSQL(lo, hi []string, end bool) (string, []any) {
	si := b.si
	var names, cols []string
	for _, c := range b.pk {
		names = append(names, pgwire.QuoteIdent(c.name))
		cols = append(cols, pgwire.QuoteIdent(c.name)+"::text")
	}
	tuple := "(" + strings.Join(names, ", ") + ")"
	var args []any
	bound := func(op string, vals []string) string {
		var ps []string
		for i, v := range vals {
			args = append(args, v)
			ps = append(ps, fmt.Sprintf("$%d::text::%s", len(args), b.pk[i].typ))
		}
		return tuple + " " + op + " (" + strings.Join(ps, ", ") + ")"
	}
	where := []string{"true"}
	if lo != nil {
		where = append(where, bound(">", lo))
	}
	if hi != nil {
		where = append(where, bound("<=", hi))
	}
	// Qualified: an output column named like a key column would order by
	// its text.
	order := "o." + strings.Join(names, ", o.")
	if end {
		return fmt.Sprintf("SELECT ARRAY[%s] FROM %s AS o WHERE %s ORDER BY %s OFFSET %d LIMIT 1",
			strings.Join(cols, ", "), ownerName(si.Table), strings.Join(where, " AND "), order, b.opts.BatchRows-1), args
	}
	q := fmt.Sprintf("SELECT ARRAY[%s], (%s)::%s::text, %s::%s::text FROM %s AS o WHERE %s ORDER BY %s",
		strings.Join(cols, ", "), si.Source("o"), si.Type, pgwire.QuoteIdent(si.KeyColumn()), si.KeyType(),
		ownerName(si.Table), strings.Join(where, " AND "), order)
	if si.Unique {
		q += " FOR SHARE"
	}
	return q, args
}

// write writes one batch's entries to lookup cluster l with its new
// position, in one transaction: a unique index's entries inserted (one
// already there for the same key is the proxy's; for another key, a
// duplicate), a non-unique index's pairs settled to their exact counts.
func (b *Backfill) write(ctx context.Context, owner, l string, items []item, end []string, n int64) error {
	tx, err := b.lookup[l].Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if len(items) > 0 {
		if b.si.Unique {
			if err := b.insertUnique(ctx, tx, owner, items); err != nil {
				return err
			}
		} else if _, err := b.settle(ctx, tx, l, items, true); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO shardgate.gsi_backfill_target (index_name, owner, last_key, rows, batches) VALUES ($1, $2, $3, $4, 1)
		ON CONFLICT (index_name, owner) DO UPDATE SET last_key = EXCLUDED.last_key, rows = gsi_backfill_target.rows + EXCLUDED.rows,
			batches = gsi_backfill_target.batches + 1`, b.si.Name, owner, end, n); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// insertUnique inserts a unique index's entries; a value already there
// with another key is a duplicate, recorded in main.
func (b *Backfill) insertUnique(ctx context.Context, tx pgx.Tx, owner string, items []item) error {
	si := b.si
	v, k := pgwire.QuoteIdent(si.Column), pgwire.QuoteIdent(si.KeyColumn())
	es := itemEntries(items)
	rows, err := tx.Query(ctx, fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES %s ON CONFLICT DO NOTHING RETURNING %s::text, %s::text",
		tableName(si), v, k, es.rows(si, false), v, k))
	if err != nil {
		return err
	}
	inserted, err := scanPairs(rows)
	if err != nil {
		return err
	}
	if len(inserted) == len(es.list) {
		return nil
	}
	rows, err = tx.Query(ctx, fmt.Sprintf("SELECT %s::text, %s::text FROM %s WHERE %s IN (%s)", v, k, tableName(si), v, es.values(si)))
	if err != nil {
		return err
	}
	present, err := scanPairs(rows)
	if err != nil {
		return err
	}
	var dups []string
	for _, e := range es.list {
		if have, ok := present[e.value]; ok && have != e.key && inserted[e.value] != e.key {
			dups = append(dups, fmt.Sprintf("%s = %s for keys %s and %s", si.Label(), e.value, have, e.key))
		}
	}
	if len(dups) > 0 {
		b.opts.Logf("%s: duplicates: %s", si.Name, strings.Join(dups, "; "))
		_, err = b.main.Exec(ctx, `UPDATE shardgate.gsi_backfills SET duplicates = (duplicates || $3::text[])[1:10] WHERE index_name = $1 AND owner = $2`,
			si.Name, owner, dups)
	}
	return err
}

// scanPairs reads (value, key) rows into a map value -> key.
func scanPairs(rows pgx.Rows) (map[string]string, error) {
	m := map[string]string{}
	for rows.Next() {
		var v, k string
		if err := rows.Scan(&v, &k); err != nil {
			rows.Close()
			return nil, err
		}
		m[v] = k
	}
	return m, rows.Err()
}

// itemEntries makes entries (one per distinct pair, counted) of items.
func itemEntries(items []item) *entries {
	es := &entries{}
	for _, it := range items {
		es.add(it.value, it.key)
	}
	return es
}

// values lists the distinct values of the entries as typed literals.
func (es *entries) values(si *vschema.SecondaryIndex) string {
	seen := map[string]bool{}
	var parts []string
	for _, e := range es.list {
		if !seen[e.value] {
			seen[e.value] = true
			parts = append(parts, literal(e.value, si.Type))
		}
	}
	return strings.Join(parts, ", ")
}

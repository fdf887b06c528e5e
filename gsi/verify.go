package gsi

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/twopc"
	"github.com/shardgate/shardgate/vschema"
)

// item is an index entry to check: a value and an owner key (for a unique
// index, the key the value is expected to have).
type item struct{ value, key string }

// Kinds of difference between a lookup table and its owner table.
const (
	DiffMissing   = "missing"   // an owner row's entry is not there
	DiffExtra     = "extra"     // an entry no owner row has (or on the wrong lookup cluster)
	DiffWrong     = "wrong"     // the value's entry names another key, or counts other rows
	DiffDuplicate = "duplicate" // a unique index's value on owner rows of several keys
)

// Diff is one entry that differs, as settled under lock.
type Diff struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
	// Key is the owner key(s) the owner table has for the value ("" if
	// none); Entry is what the lookup table had ("" if nothing).
	Key   string `json:"key"`
	Entry string `json:"entry"`
}

func (d Diff) String() string {
	return fmt.Sprintf("%s %s (owner %s, entry %s)", d.Kind, d.Value, orNone(d.Key), orNone(d.Entry))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ClusterResult is the verification of one lookup cluster.
type ClusterResult struct {
	Cluster string `json:"cluster"`
	// Entries counts the owner rows the lookup table stands for (a
	// non-unique entry counts n); Expected the owner rows whose value maps
	// to this cluster.
	Entries  int64 `json:"entries"`
	Expected int64 `json:"expected"`
	// Checksums of (value, key) over both, order-independent.
	Checksum, ExpectedChecksum uint64
	// Counts of the differences confirmed under lock, by kind.
	Missing, Extra, Wrong, Duplicate int
	// Diffs are the first differences (at most 10).
	Diffs    []Diff `json:"diffs,omitempty"`
	Repaired bool   `json:"repaired"`
}

// Clean says nothing differs.
func (r ClusterResult) Clean() bool { return r.Missing+r.Extra+r.Wrong+r.Duplicate == 0 }

// sums is a count and an order-independent checksum of (value, key) pairs.
type sums struct {
	n   int64
	sum uint64
}

func (s *sums) add(value, key string, n int64) {
	s.n += n
	s.sum += uint64(n) * xxhash.Sum64String(value+"\x00"+key)
}

// Verify compares, per lookup cluster, the count and checksum of the
// lookup table's (value, key) pairs with those of the owner rows whose
// value maps there; where they differ, it lists the differing entries and
// settles each under lock (settle), so a write in flight is not reported.
// repair: fix what differs (a unique index's duplicates cannot be).
func (b *Backfill) Verify(ctx context.Context, repair bool) ([]ClusterResult, error) {
	si := b.si
	expect := map[string]*sums{}
	for _, l := range si.Group.Clusters {
		expect[l] = &sums{}
	}
	err := b.scanOwner(ctx, func(l, value, key string, n int64) { expect[l].add(value, key, n) })
	if err != nil {
		return nil, err
	}
	var out []ClusterResult
	for _, l := range si.Group.Clusters {
		got := &sums{}
		if err := b.scanLookup(ctx, l, func(value, key string, n int64) { got.add(value, key, n) }); err != nil {
			return nil, err
		}
		r := ClusterResult{Cluster: l, Entries: got.n, Expected: expect[l].n, Checksum: got.sum, ExpectedChecksum: expect[l].sum}
		if *got != *expect[l] {
			if err := b.compare(ctx, l, repair, &r); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// scanOwner reads the owner projection from every owner cluster: each
// (value, key) with its number of rows and the lookup cluster of the value.
func (b *Backfill) scanOwner(ctx context.Context, f func(l, value, key string, n int64)) error {
	si := b.si
	q := fmt.Sprintf("SELECT (%s)::%s::text, %s::%s::text, count(*) FROM %s WHERE (%s) IS NOT NULL GROUP BY 1, 2",
		si.Source(""), si.Type, pgwire.QuoteIdent(si.KeyColumn()), si.KeyType(), ownerName(si.Table), si.Source(""))
	for _, c := range si.Group.Clusters {
		rows, err := b.owner[c].Query(ctx, q)
		if err != nil {
			return fmt.Errorf("%s on %s: %w", si.Table, c, err)
		}
		var v, k string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&v, &k, &n}, func() error {
			l, err := clusterOf(si, v)
			if err == nil {
				f(l, v, k, n)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("%s on %s: %w", si.Table, c, err)
		}
	}
	return nil
}

// scanLookup reads lookup cluster l's entries.
func (b *Backfill) scanLookup(ctx context.Context, l string, f func(value, key string, n int64)) error {
	si := b.si
	n := "1"
	if !si.Unique {
		n = pgwire.QuoteIdent(vschema.CountColumn)
	}
	rows, err := b.lookup[l].Query(ctx, fmt.Sprintf("SELECT %s::text, %s::text, %s::bigint FROM %s",
		pgwire.QuoteIdent(si.Column), pgwire.QuoteIdent(si.KeyColumn()), n, tableName(si)))
	if err != nil {
		return fmt.Errorf("%s on %s: %w", si.Lookup, l, err)
	}
	var v, k string
	var c int64
	_, err = pgx.ForEachRow(rows, []any{&v, &k, &c}, func() error { f(v, k, c); return nil })
	return err
}

// compare lists the entries of lookup cluster l that differ from the owner
// projection and settles them in batches.
func (b *Backfill) compare(ctx context.Context, l string, repair bool, r *ClusterResult) error {
	// owner: entry -> (key of a unique value, or count of a pair); a
	// unique value seen with two keys is kept as a candidate.
	type want struct {
		key string
		n   int64
		dup bool
	}
	owner := map[string]*want{}
	ik := func(value, key string) string {
		if b.si.Unique {
			return value
		}
		return value + "\x00" + key
	}
	if err := b.scanOwner(ctx, func(cl, value, key string, n int64) {
		if cl != l {
			return
		}
		w := owner[ik(value, key)]
		if w == nil {
			owner[ik(value, key)] = &want{key: key, n: n}
			return
		}
		w.n += n
		w.dup = w.dup || w.key != key
	}); err != nil {
		return err
	}
	var cands []item
	err := b.scanLookup(ctx, l, func(value, key string, n int64) {
		w := owner[ik(value, key)]
		if w == nil || w.dup || w.key != key || w.n != n {
			cands = append(cands, item{value: value, key: key})
		}
		delete(owner, ik(value, key))
	})
	if err != nil {
		return err
	}
	for k, w := range owner {
		cands = append(cands, item{value: strings.SplitN(k, "\x00", 2)[0], key: w.key})
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].value < cands[j].value })
	for len(cands) > 0 {
		part := cands[:min(len(cands), 1000)]
		cands = cands[len(part):]
		diffs, err := b.settleTx(ctx, l, part, repair)
		if err != nil {
			return err
		}
		for _, d := range diffs {
			switch d.Kind {
			case DiffMissing:
				r.Missing++
			case DiffExtra:
				r.Extra++
			case DiffWrong:
				r.Wrong++
			case DiffDuplicate:
				r.Duplicate++
			}
			if len(r.Diffs) < 10 {
				r.Diffs = append(r.Diffs, d)
			}
		}
		r.Repaired = repair
	}
	return nil
}

// settleTx settles items in a transaction of their own on lookup cluster
// l: committed if repair, else rolled back.
func (b *Backfill) settleTx(ctx context.Context, l string, items []item, repair bool) ([]Diff, error) {
	tx, err := b.lookup[l].Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	diffs, err := b.settle(ctx, tx, l, items, repair)
	if err != nil || !repair {
		return diffs, err
	}
	return diffs, tx.Commit(ctx)
}

// settle decides, for each item, what lookup cluster l must hold, under
// lock, and reports what differs (fixing it when repair, in tx):
//
//  1. the items' entries are locked on l, created as placeholders where
//     missing (INSERT ... ON CONFLICT DO UPDATE): a client's write of them
//     now waits for tx, and one in flight has finished;
//  2. every owner cluster's prepared transactions of that moment are
//     waited for, so an owner write whose entry was committed on l is
//     committed on its own cluster too;
//  3. the owner rows are read at a new snapshot: a client's owner write
//     not yet committed has its entry write still to come (it waits for
//     tx), so the truth read here plus the writes still to come is what
//     l will hold.
func (b *Backfill) settle(ctx context.Context, tx pgx.Tx, l string, items []item, repair bool) ([]Diff, error) {
	si := b.si
	v, k := pgwire.QuoteIdent(si.Column), pgwire.QuoteIdent(si.KeyColumn())
	es := itemEntries(items)
	if si.Unique {
		// One placeholder per value.
		seen := map[string]bool{}
		list := es.list[:0:0]
		for _, e := range es.list {
			if !seen[e.value] {
				seen[e.value] = true
				list = append(list, e)
			}
		}
		es = &entries{list: list}
	}
	var lockSQL string
	if si.Unique {
		lockSQL = fmt.Sprintf("INSERT INTO %s AS l (%s, %s) VALUES %s ON CONFLICT (%s) DO UPDATE SET %s = l.%s RETURNING %s::text, %s::text, 1::bigint, xmax = 0",
			tableName(si), v, k, es.rows(si, false), v, k, k, v, k)
	} else {
		n := pgwire.QuoteIdent(vschema.CountColumn)
		lockSQL = fmt.Sprintf("INSERT INTO %s AS l (%s, %s, %s) VALUES %s ON CONFLICT (%s, %s) DO UPDATE SET %s = l.%s RETURNING %s::text, %s::text, %s::bigint, xmax = 0",
			tableName(si), v, k, n, zeroRows(si, es), v, k, n, n, v, k, n)
	}
	type entry struct {
		key     string
		n       int64
		created bool
	}
	held := map[item]entry{}
	rows, err := tx.Query(ctx, lockSQL)
	if err != nil {
		return nil, err
	}
	var rv, rk string
	var rn int64
	var created bool
	if _, err := pgx.ForEachRow(rows, []any{&rv, &rk, &rn, &created}, func() error {
		if si.Unique {
			held[item{value: rv}] = entry{key: rk, n: rn, created: created}
		} else {
			held[item{value: rv, key: rk}] = entry{n: rn, created: created}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for _, c := range si.Group.Clusters {
		if err := waitPrepared(ctx, b.owner[c]); err != nil {
			return nil, fmt.Errorf("owner cluster %s: %w", c, err)
		}
	}
	// Under commit: best_effort, an entry is committed before its owner
	// row: wait for the owner writes of the entries held (besteffort.go).
	var writing []item
	for it, h := range held {
		if !h.created {
			if si.Unique {
				it.key = h.key
			}
			writing = append(writing, it)
		}
	}
	if err := b.waitWriters(ctx, writing); err != nil {
		return nil, err
	}
	// The truth: the owner rows' keys (unique) or counts (non-unique).
	truth := map[item]map[string]int64{}
	var cond string
	ov := "(" + si.Source("") + ")" // the value in the owner table
	if si.Unique {
		cond = fmt.Sprintf("%s IN (%s)", ov, es.values(si))
	} else {
		cond = fmt.Sprintf("(%s, %s) IN (%s)", ov, k, es.rows(si, false))
	}
	q := fmt.Sprintf("SELECT %s::%s::text, %s::%s::text, count(*) FROM %s WHERE %s GROUP BY 1, 2",
		ov, si.Type, k, si.KeyType(), ownerName(si.Table), cond)
	for _, c := range si.Group.Clusters {
		rows, err := b.owner[c].Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("%s on %s: %w", si.Table, c, err)
		}
		if _, err := pgx.ForEachRow(rows, []any{&rv, &rk, &rn}, func() error {
			it := item{value: rv, key: rk}
			if si.Unique {
				it.key = ""
			}
			if truth[it] == nil {
				truth[it] = map[string]int64{}
			}
			truth[it][rk] += rn
			return nil
		}); err != nil {
			return nil, err
		}
	}
	var diffs []Diff
	var drop, fix []*entryFix
	for _, e := range es.list {
		it := item{value: e.value, key: e.key}
		if si.Unique {
			it.key = ""
		}
		h := held[it]
		t := truth[it]
		if cl, err := clusterOf(si, e.value); err != nil {
			return nil, err
		} else if cl != l {
			t = nil // belongs to another lookup cluster
		}
		have := h.key
		if !si.Unique && !h.created {
			have = fmt.Sprint(h.n)
		}
		if h.created {
			have = ""
		}
		switch {
		case si.Unique && len(t) > 1:
			var keys []string
			for key := range t {
				keys = append(keys, key)
			}
			sort.Strings(keys)
			diffs = append(diffs, Diff{Kind: DiffDuplicate, Value: e.value, Key: strings.Join(keys, ","), Entry: have})
			if h.created {
				drop = append(drop, &entryFix{value: e.value, key: e.key})
			}
		case len(t) == 0:
			if !h.created {
				diffs = append(diffs, Diff{Kind: DiffExtra, Value: e.value, Entry: have})
			}
			drop = append(drop, &entryFix{value: e.value, key: h.key})
			if !si.Unique {
				drop[len(drop)-1].key = e.key
			}
		case si.Unique:
			var want string
			for key := range t {
				want = key
			}
			switch {
			case h.created:
				diffs = append(diffs, Diff{Kind: DiffMissing, Value: e.value, Key: want})
			case h.key != want:
				diffs = append(diffs, Diff{Kind: DiffWrong, Value: e.value, Key: want, Entry: have})
			default:
				continue
			}
			fix = append(fix, &entryFix{value: e.value, key: want})
		default:
			want := t[e.key]
			switch {
			case h.created:
				diffs = append(diffs, Diff{Kind: DiffMissing, Value: e.value, Key: fmt.Sprintf("%s x%d", e.key, want)})
			case h.n != want:
				diffs = append(diffs, Diff{Kind: DiffWrong, Value: e.value, Key: fmt.Sprintf("%s x%d", e.key, want), Entry: fmt.Sprintf("%s x%d", e.key, h.n)})
			default:
				continue
			}
			fix = append(fix, &entryFix{value: e.value, key: e.key, n: want})
		}
	}
	if !repair {
		return diffs, nil
	}
	for _, q := range b.fixSQL(drop, fix) {
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	return diffs, nil
}

// entryFix is an entry to remove, or to set to a key (unique) or count.
type entryFix struct {
	value, key string
	n          int64
}

// fixSQL removes the drop entries and sets the fix ones.
func (b *Backfill) fixSQL(drop, fix []*entryFix) []string {
	si := b.si
	v, k := pgwire.QuoteIdent(si.Column), pgwire.QuoteIdent(si.KeyColumn())
	var out []string
	pairs := func(fs []*entryFix, withN bool) string {
		var parts []string
		for _, f := range fs {
			p := "(" + literal(f.value, si.Type) + ", " + literal(f.key, si.KeyType())
			if withN {
				p += fmt.Sprintf(", %d::bigint", f.n)
			}
			parts = append(parts, p+")")
		}
		return strings.Join(parts, ", ")
	}
	if len(drop) > 0 {
		if si.Unique {
			var vals []string
			for _, f := range drop {
				vals = append(vals, literal(f.value, si.Type))
			}
			out = append(out, fmt.Sprintf("DELETE FROM %s WHERE %s IN (%s)", tableName(si), v, strings.Join(vals, ", ")))
		} else {
			out = append(out, fmt.Sprintf("DELETE FROM %s WHERE (%s, %s) IN (%s)", tableName(si), v, k, pairs(drop, false)))
		}
	}
	if len(fix) > 0 {
		if si.Unique {
			out = append(out, fmt.Sprintf("UPDATE %s AS l SET %s = d.k FROM (VALUES %s) AS d(v, k) WHERE l.%s = d.v",
				tableName(si), k, pairs(fix, false), v))
		} else {
			n := pgwire.QuoteIdent(vschema.CountColumn)
			out = append(out, fmt.Sprintf("UPDATE %s AS l SET %s = d.n FROM (VALUES %s) AS d(v, k, n) WHERE l.%s = d.v AND l.%s = d.k",
				tableName(si), n, pairs(fix, true), v, k))
		}
	}
	return out
}

// zeroRows lists entries as (value, key, 0) placeholder rows.
func zeroRows(si *vschema.SecondaryIndex, es *entries) string {
	var parts []string
	for _, e := range es.list {
		parts = append(parts, "("+literal(e.value, si.Type)+", "+literal(e.key, si.KeyType())+", 0)")
	}
	return strings.Join(parts, ", ")
}

// waitWriters waits for the owner writes in flight of the items' entries
// under commit: best_effort: each owner cluster takes the entries' locks
// exclusively, then lets them go.
func (b *Backfill) waitWriters(ctx context.Context, items []item) error {
	byOwner := map[string]*entries{}
	for _, it := range items {
		c, err := ownerCluster(b.si, it.key)
		if err != nil {
			return err
		}
		if byOwner[c] == nil {
			byOwner[c] = &entries{}
		}
		byOwner[c].list = append(byOwner[c].list, &entry{value: it.value, key: it.key})
	}
	for c, es := range byOwner {
		for _, part := range es.chunks(maxEntries) {
			q := "BEGIN; SET LOCAL lock_timeout = '1min'; " + ownerLockSQL(b.si, part, false) + "; COMMIT"
			if _, err := b.owner[c].Exec(ctx, q); err != nil {
				_, _ = b.owner[c].Exec(ctx, "ROLLBACK")
				return fmt.Errorf("owner cluster %s: wait for the writes of entries: %w", c, err)
			}
		}
	}
	return nil
}

// waitPrepared waits until the two-phase transactions prepared on c at
// the time of the call are finished (committed or rolled back).
func waitPrepared(ctx context.Context, c *pgx.Conn) error {
	rows, err := c.Query(ctx, "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1)", twopc.GIDPrefix)
	if err != nil {
		return err
	}
	gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(gids) == 0 {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var left int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = ANY($1)", gids).Scan(&left); err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return sqlerr.New(sqlerr.LockNotAvailable, "%d prepared transactions are still in doubt after a minute", left).
				WithHint("The proxies' recovery resolves them; run again later.")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

package backend

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The probe also reads the server's default extra_float_digits, which
// shapes the text of float sums the proxy writes.
//
// The proxy compares text bytewise. That is the order of the C (and
// POSIX, C.UTF-8) collation only, so text ORDER BY, min and max across
// shards are exact only where that collation applies: an explicit COLLATE
// "C" on the key, or a database whose default collation is C-like and no
// column of which declares another collation. Equality (GROUP BY,
// DISTINCT) is bytewise under every deterministic collation. Each cluster
// is asked once a minute.

// CollationInfo is what a cluster's catalog says about text comparison.
type CollationInfo struct {
	at time.Time // when the cluster was asked
	// Bytewise: the database's default collation orders like memcmp.
	Bytewise bool
	// Collation names the default collation, for messages.
	Collation string
	// OtherCollations: some user column declares a collation other than
	// the default, C or POSIX.
	OtherCollations bool
	// Nondeterministic: some column uses a nondeterministic collation
	// (its equal values may differ in bytes).
	Nondeterministic bool
	// ExtraFloatDigits is the server's extra_float_digits before any SET
	// (the session's SET, if any, wins: see sessionstate.Settings.ExtraFloatDigits).
	ExtraFloatDigits int
}

// collationCache holds a pool's CollationInfo.
type collationCache struct {
	mu   sync.Mutex
	info *CollationInfo
}

const collationTTL = time.Minute

const collationProbe = `SELECT d.datcollate,
  coalesce(to_jsonb(d) ->> 'datlocprovider', 'c'),
  coalesce(to_jsonb(d) ->> 'datlocale', to_jsonb(d) ->> 'daticulocale', ''),
  EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
            JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
          WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attcollation NOT IN (0, 100, 950, 951)
            AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%'),
  EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
            JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation
          WHERE a.attnum > 0 AND NOT a.attisdropped AND NOT co.collisdeterministic),
  (SELECT reset_val FROM pg_catalog.pg_settings WHERE name = 'extra_float_digits')
FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()`

// fresh returns the cached info if it is recent enough.
func (c *collationCache) fresh() *CollationInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.info != nil && time.Since(c.info.at) < collationTTL {
		return c.info
	}
	return nil
}

func (c *collationCache) store(info *CollationInfo) {
	c.mu.Lock()
	c.info = info
	c.mu.Unlock()
}

// Collations returns the collation facts of each connection's cluster,
// asking the clusters whose cached facts are stale. The connections must
// be idle (no statement in flight). A cluster that cannot be asked counts
// as not bytewise: text ordering there is refused, never guessed.
func Collations(conns []*Conn) []*CollationInfo {
	out := make([]*CollationInfo, len(conns))
	for i, b := range conns {
		if info := b.pool.coll.fresh(); info != nil {
			out[i] = info
			continue
		}
		info := &CollationInfo{at: time.Now(), Collation: "unknown", ExtraFloatDigits: 1}
		sql := collationProbe
		inTx := b.TxStatus == 'T'
		if inTx {
			// A failed probe must not abort the client's transaction.
			sql = "SAVEPOINT sg_collation_probe; " + sql + "; RELEASE SAVEPOINT sg_collation_probe"
		}
		rows, err := b.Query(sql)
		if err != nil && inTx && b.TxStatus == 'E' && !b.Broken {
			_ = b.SimpleExec("ROLLBACK TO SAVEPOINT sg_collation_probe; RELEASE SAVEPOINT sg_collation_probe", nil)
		}
		if err == nil && len(rows) > 0 && len(rows[0]) == 6 {
			row := rows[0]
			collate, provider, locale := string(row[0]), string(row[1]), string(row[2])
			info.Collation = collate
			switch provider {
			case "c":
				info.Bytewise = isCLocale(collate)
			case "b":
				info.Collation = locale
				info.Bytewise = locale == "C" || locale == "C.UTF-8"
			default:
				info.Collation = locale
			}
			info.OtherCollations = string(row[3]) == "t"
			info.Nondeterministic = string(row[4]) == "t"
			if n, err := strconv.Atoi(string(row[5])); err == nil {
				info.ExtraFloatDigits = n
			}
		}
		if !b.Broken {
			b.pool.coll.store(info)
		}
		out[i] = info
	}
	return out
}

// PoolCollations returns the collation facts of each connection's
// cluster, as Pool.Collation does: for connections that may have work in
// flight (a batch's), stale facts are asked on a connection straight from
// the pool (the session may hold this cluster's connection, under session
// pooling; the probe needs no settings).
func PoolCollations(conns []*Conn) []*CollationInfo {
	out := make([]*CollationInfo, len(conns))
	for i, b := range conns {
		out[i] = b.Pool().Collation()
	}
	return out
}

// Collation returns the collation facts of the pool's cluster, asking the
// cluster, on a connection of the pool's own, when the cached facts are
// stale: for callers whose connections have work in flight. A cluster that
// cannot be asked within a second counts as not bytewise.
func (p *Pool) Collation() *CollationInfo {
	if info := p.coll.fresh(); info != nil {
		return info
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	probe, err := p.Acquire(ctx)
	cancel()
	if err != nil {
		return &CollationInfo{at: time.Now(), Collation: "unknown"}
	}
	info := Collations([]*Conn{probe})[0]
	p.Release(probe)
	return info
}

func isCLocale(s string) bool {
	switch strings.ToUpper(s) {
	case "C", "POSIX", "C.UTF-8", "C.UTF8":
		return true
	}
	return false
}

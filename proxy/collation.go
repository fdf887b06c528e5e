package proxy

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/pgwire"
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

// collationInfo is what a cluster's catalog says about text comparison.
type collationInfo struct {
	at time.Time
	// bytewise: the database's default collation orders like memcmp.
	bytewise bool
	// collation names the default collation, for messages.
	collation string
	// otherCollations: some user column declares a collation other than
	// the default, C or POSIX.
	otherCollations bool
	// nondeterministic: some column uses a nondeterministic collation
	// (its equal values may differ in bytes).
	nondeterministic bool
	// extraFloatDigits is the server's extra_float_digits before any SET
	// (the session's SET, if any, wins: see session.extraFloatDigits).
	extraFloatDigits int
}

// collationCache holds a pool's collationInfo.
type collationCache struct {
	mu   sync.Mutex
	info *collationInfo
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
func (c *collationCache) fresh() *collationInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.info != nil && time.Since(c.info.at) < collationTTL {
		return c.info
	}
	return nil
}

func (c *collationCache) store(info *collationInfo) {
	c.mu.Lock()
	c.info = info
	c.mu.Unlock()
}

// needsCollationProbe reports whether any of conns' clusters must be asked.
func needsCollationProbe(conns []*backendConn) bool {
	for _, b := range conns {
		if b.pool.coll.fresh() == nil {
			return true
		}
	}
	return false
}

// collations returns the collation facts of each connection's cluster,
// asking the clusters whose cached facts are stale. The connections must
// be idle (no statement in flight). A cluster that cannot be asked counts
// as not bytewise: text ordering there is refused, never guessed.
func collations(conns []*backendConn) []*collationInfo {
	out := make([]*collationInfo, len(conns))
	for i, b := range conns {
		if info := b.pool.coll.fresh(); info != nil {
			out[i] = info
			continue
		}
		info := &collationInfo{at: time.Now(), collation: "unknown", extraFloatDigits: 1}
		sql := collationProbe
		inTx := b.txStatus == 'T'
		if inTx {
			// A failed probe must not abort the client's transaction.
			sql = "SAVEPOINT sg_collation_probe; " + sql + "; RELEASE SAVEPOINT sg_collation_probe"
		}
		row, err := b.queryRow(sql)
		if err != nil && inTx && b.txStatus == 'E' && !b.broken {
			_ = b.simpleExec("ROLLBACK TO SAVEPOINT sg_collation_probe; RELEASE SAVEPOINT sg_collation_probe", nil)
		}
		if err == nil && len(row) == 6 {
			collate, provider, locale := string(row[0]), string(row[1]), string(row[2])
			info.collation = collate
			switch provider {
			case "c":
				info.bytewise = isCLocale(collate)
			case "b":
				info.collation = locale
				info.bytewise = locale == "C" || locale == "C.UTF-8"
			default:
				info.collation = locale
			}
			info.otherCollations = string(row[3]) == "t"
			info.nondeterministic = string(row[4]) == "t"
			if n, err := strconv.Atoi(string(row[5])); err == nil {
				info.extraFloatDigits = n
			}
		}
		if !b.broken {
			b.pool.coll.store(info)
		}
		out[i] = info
	}
	return out
}

func isCLocale(s string) bool {
	switch strings.ToUpper(s) {
	case "C", "POSIX", "C.UTF-8", "C.UTF8":
		return true
	}
	return false
}

// queryRow runs a query with the simple protocol on an idle connection
// and returns its first row's text values (nil for NULL).
func (b *backendConn) queryRow(sql string) ([][]byte, error) {
	if err := b.send(&pgproto3.Query{String: sql}); err != nil {
		return nil, err
	}
	if err := b.flush(); err != nil {
		return nil, err
	}
	var row [][]byte
	var first error
	for {
		m, err := b.read()
		if err != nil {
			return nil, err
		}
		switch m.Type {
		case 'D':
			if row == nil {
				row, err = pgwire.ParseDataRow(m.Body)
				if err != nil && first == nil {
					first = err
				}
			}
		case 'E':
			if first == nil {
				var e pgproto3.ErrorResponse
				if derr := e.Decode(m.Body); derr == nil {
					first = pgwire.PgErrorFrom(&e)
				} else {
					first = derr
				}
			}
		case 'S':
			var ps pgproto3.ParameterStatus
			if ps.Decode(m.Body) == nil {
				b.params[ps.Name] = ps.Value
			}
		case 'Z':
			if len(m.Body) > 0 {
				b.txStatus = m.Body[0]
			}
			return row, first
		}
	}
}

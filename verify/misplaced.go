package verify

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// A sharded table's rows on one cluster are read in chunks of heap blocks
// (a TID range scan: no sort, no index, and a position that is one
// number). Where Postgres can tell a row's shard itself — a column index
// under range or modulo — the chunk is one aggregate that returns the
// misplaced rows' ctids. xxhash has no SQL function, and an expression
// index's key must be the proxy's own evaluation (package keyexpr), so
// there the chunk's keys alone are streamed by binary COPY and mapped in
// Go. Either way only the misplaced rows are then read whole.

func misplacedRunner(t *vschema.Table) func(context.Context, *verifier, *Unit) error {
	return func(ctx context.Context, v *verifier, u *Unit) error {
		c, err := v.conn(ctx, u.Cluster)
		if err != nil {
			return err
		}
		ti, err := readTable(ctx, c, t.Schema, t.Name)
		if err != nil {
			return err
		}
		m := &misplaced{v: v, t: t, ti: ti, c: c, cluster: u.Cluster}
		m.pred = m.pushdown()
		blocks := int64(1)
		if ti.density > 0 {
			blocks = max(1, int64(float64(v.chunkRows())/ti.density))
		}
		lo := int64(0)
		if len(u.Position) == 1 {
			if lo, err = strconv.ParseInt(u.Position[0], 10, 64); err != nil {
				return fmt.Errorf("bad position %v", u.Position)
			}
		}
		for lo < ti.blocks {
			hi := min(lo+blocks, ti.blocks)
			start := time.Now()
			n, bad, err := m.chunk(ctx, lo, hi)
			if err != nil {
				return err
			}
			if err := m.report(ctx, u, bad); err != nil {
				return err
			}
			if err := v.chunkDone(ctx, u, n, time.Since(start), []string{strconv.FormatInt(hi, 10)}); err != nil {
				return err
			}
			lo = hi
		}
		return nil
	}
}

type misplaced struct {
	v       *verifier
	t       *vschema.Table
	ti      *tableInfo
	c       *pgx.Conn
	cluster string
	pred    string // the SQL condition of a row that belongs here; "": the keys are mapped in Go
}

// keySQL is the shard key in SQL, for a column index: the column cast to
// the index type.
func (m *misplaced) keySQL() string {
	ix := m.t.Group.Index
	typ := ix.Type.String()
	if ix.Type.IsInteger() {
		typ = "bigint"
	}
	return "(" + pgwire.QuoteIdent(m.t.KeyColumn) + ")::" + typ
}

// pushdown is the condition of a row of this cluster under a range or
// modulo column index ("" under xxhash or an expression index).
func (m *misplaced) pushdown() string {
	ix := m.t.Group.Index
	if ix.Expr != nil || ix.Function.Name() == topology.FunctionXXHash {
		return ""
	}
	var tg *topology.Group
	for _, g := range m.v.topo.Groups {
		if g.Name == m.t.Group.Name {
			tg = g
		}
	}
	k := m.keySQL()
	var ors []string
	for _, sh := range m.t.Group.ShardsOnCluster(m.cluster) {
		ts := tg.Shards[sh.Index]
		switch ix.Function.Name() {
		case topology.FunctionRange:
			conds := []string{"true"}
			if ts.From != nil {
				conds = append(conds, fmt.Sprintf("%s >= %d", k, *ts.From))
			}
			if ts.To != nil {
				conds = append(conds, fmt.Sprintf("%s < %d", k, *ts.To))
			}
			ors = append(ors, "("+strings.Join(conds, " AND ")+")")
		case topology.FunctionModulo:
			n := len(tg.Shards)
			ors = append(ors, fmt.Sprintf("(%s %% %d + %d) %% %d = %d", k, n, n, n, ts.Modulo))
		}
	}
	if len(ors) == 0 {
		return "false"
	}
	return strings.Join(ors, " OR ")
}

func blockRange(lo, hi int64) string {
	return fmt.Sprintf("ctid >= '(%d,0)'::tid AND ctid < '(%d,0)'::tid", lo, hi)
}

// chunk checks the rows of blocks [lo, hi): how many, and the ctids of
// those not on their key's cluster.
func (m *misplaced) chunk(ctx context.Context, lo, hi int64) (int64, []string, error) {
	if m.pred != "" {
		var n int64
		var bad []string
		err := m.c.QueryRow(ctx, fmt.Sprintf("SELECT count(*), coalesce(array_agg(ctid::text) FILTER (WHERE NOT coalesce(%s, false)), '{}') FROM %s WHERE %s",
			m.pred, m.ti.name, blockRange(lo, hi))).Scan(&n, &bad)
		return n, bad, err
	}
	cols := []string{"ctid"}
	ix := m.t.Group.Index
	exprCols := []string(nil)
	if ix.Expr != nil {
		exprCols = ix.Expr.Columns()
		for _, col := range exprCols {
			cols = append(cols, pgwire.QuoteIdent(col)+"::text")
		}
	} else {
		cols = append(cols, m.keySQL())
	}
	d := &keyDecoder{m: m, exprCols: exprCols}
	_, err := m.c.PgConn().CopyTo(ctx, d, fmt.Sprintf("COPY (SELECT %s FROM %s WHERE %s) TO STDOUT (FORMAT binary)",
		strings.Join(cols, ", "), m.ti.name, blockRange(lo, hi)))
	if err == nil && d.err == nil && d.buf.Len() > 0 {
		d.err = fmt.Errorf("binary COPY: %d bytes left over", d.buf.Len())
	}
	if err == nil {
		err = d.err
	}
	return d.rows, d.bad, err
}

// keyDecoder reads a binary COPY of (ctid, key columns) and keeps the
// ctids of the rows whose key maps to another cluster (or to none).
type keyDecoder struct {
	m        *misplaced
	exprCols []string // an expression index's columns, as text; nil: one key field
	buf      bytes.Buffer
	header   bool
	rows     int64
	bad      []string
	err      error
	fields   [][]byte
}

// binarySignature starts a binary COPY stream ("PGCOPY\n\377\r\n\0"),
// followed by 4 bytes of flags and the header extension's length.
var binarySignature = []byte("PGCOPY\n\377\r\n\x00")

func (d *keyDecoder) Write(p []byte) (int, error) {
	d.buf.Write(p)
	for d.err == nil {
		b := d.buf.Bytes()
		if !d.header {
			if len(b) < len(binarySignature)+8 {
				return len(p), nil
			}
			if !bytes.Equal(b[:len(binarySignature)], binarySignature) {
				d.err = fmt.Errorf("binary COPY: bad signature")
				break
			}
			ext := int(binary.BigEndian.Uint32(b[len(binarySignature)+4:]))
			if len(b) < len(binarySignature)+8+ext {
				return len(p), nil
			}
			d.buf.Next(len(binarySignature) + 8 + ext)
			d.header = true
			continue
		}
		n, ok := d.tuple(b)
		if !ok {
			return len(p), nil
		}
		d.buf.Next(n)
	}
	return len(p), nil
}

// tuple decodes one tuple at the start of b: the bytes it took, false if
// b does not hold all of it yet.
func (d *keyDecoder) tuple(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	nf := int(int16(binary.BigEndian.Uint16(b)))
	if nf == -1 {
		return 2, true // the trailer
	}
	off := 2
	d.fields = d.fields[:0]
	for range nf {
		if len(b) < off+4 {
			return 0, false
		}
		l := int(int32(binary.BigEndian.Uint32(b[off:])))
		off += 4
		if l < 0 {
			d.fields = append(d.fields, nil)
			continue
		}
		if len(b) < off+l {
			return 0, false
		}
		d.fields = append(d.fields, b[off:off+l])
		off += l
	}
	d.rows++
	if !d.here(d.fields[1:]) {
		tid := d.fields[0]
		d.bad = append(d.bad, fmt.Sprintf("(%d,%d)", binary.BigEndian.Uint32(tid), binary.BigEndian.Uint16(tid[4:])))
	}
	return off, true
}

// here says whether the row with these key fields belongs on the cluster
// read; a key that maps nowhere does not.
func (d *keyDecoder) here(f [][]byte) bool {
	m := d.m
	var key vschema.Key
	var err error
	ix := m.t.Group.Index
	switch {
	case d.exprCols != nil:
		key, err = m.t.KeyFromColumns(func(col string) (keyexpr.Value, bool) {
			for i, c := range d.exprCols {
				if c == col {
					if f[i] == nil {
						return keyexpr.Null(), true
					}
					return keyexpr.Text(string(f[i])), true
				}
			}
			return keyexpr.Value{}, false
		})
	case f[0] == nil:
		return false
	case ix.Type.IsInteger():
		key = vschema.IntegerKey(int64(binary.BigEndian.Uint64(f[0])))
	case ix.Type == vschema.UUID:
		key = vschema.UUIDKey([16]byte(f[0]))
	default:
		key = vschema.TextKey(string(f[0]))
	}
	if err != nil {
		return false
	}
	sh, err := m.t.Group.ShardFor(key)
	return err == nil && sh.Cluster == m.cluster
}

// rowKey computes a row's shard key from its columns' text forms.
func (m *misplaced) rowKey(cols map[string]*string) (vschema.Key, error) {
	return m.t.KeyFromColumns(func(col string) (keyexpr.Value, bool) {
		v, ok := cols[col]
		if !ok {
			return keyexpr.Value{}, false
		}
		if v == nil {
			return keyexpr.Null(), true
		}
		return keyexpr.Text(*v), true
	})
}

// report reads the misplaced rows of a chunk (their primary keys and key
// columns) and records them, moved to their cluster when repairing.
func (m *misplaced) report(ctx context.Context, u *Unit, ctids []string) error {
	if len(ctids) == 0 {
		return nil
	}
	keyCols := m.t.KeyColumns()
	var sel []string
	for _, c := range keyCols {
		sel = append(sel, pgwire.QuoteIdent(c)+"::text")
	}
	rows, err := m.c.Query(ctx, fmt.Sprintf("SELECT %s, ARRAY[%s] FROM %s WHERE ctid = ANY($1::tid[])",
		m.ti.pkText(""), strings.Join(sel, ", "), m.ti.name), ctids)
	if err != nil {
		return err
	}
	type bad struct {
		pk   string
		cols map[string]*string
	}
	var found []bad
	var pk string
	var vals []*string
	if _, err := pgx.ForEachRow(rows, []any{&pk, &vals}, func() error {
		b := bad{pk: pk, cols: map[string]*string{}}
		for i, c := range keyCols {
			b.cols[c] = vals[i]
		}
		found = append(found, b)
		return nil
	}); err != nil {
		return err
	}
	for _, b := range found {
		f := Finding{Key: b.pk}
		key, err := m.rowKey(b.cols)
		var to string
		if err == nil {
			var sh *vschema.Shard
			if sh, err = m.t.Group.ShardFor(key); err == nil {
				to = sh.Cluster
			}
		}
		switch {
		case err != nil:
			f.Detail = fmt.Sprintf("its shard key has no shard: %v", err)
		case to == m.cluster:
			continue // moved here since the chunk was read
		default:
			f.Detail = fmt.Sprintf("key %s belongs on %s", key, to)
			if m.v.opts.Repair {
				f.Repaired, err = m.move(ctx, b.pk, to)
				if err != nil {
					f.Detail += ": not moved: " + err.Error()
				} else if f.Repaired {
					f.Detail += ": moved"
				}
			}
		}
		u.find(f)
	}
	return nil
}

// move moves a misplaced row to its cluster, unless that cluster has
// another row with the same primary key (then it reports false with the
// reason). The row is locked here, inserted there and committed, then
// deleted here: a run killed in between leaves two equal rows, and the
// next run deletes the misplaced one.
func (m *misplaced) move(ctx context.Context, pk, to string) (bool, error) {
	if len(m.ti.pk) == 0 {
		return false, errNoPK
	}
	dst, err := m.v.conn(ctx, to)
	if err != nil {
		return false, err
	}
	tx, err := m.c.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var rowJSON, text string
	err = tx.QueryRow(ctx, fmt.Sprintf("SELECT row_to_json(t)::text, %s FROM %s t WHERE %s FOR UPDATE",
		m.ti.rowText(), m.ti.name, m.ti.pkMatch(1)), pk).Scan(&rowJSON, &text)
	if err == pgx.ErrNoRows {
		return false, fmt.Errorf("the row is gone")
	}
	if err != nil {
		return false, err
	}
	var there string
	err = dst.QueryRow(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", m.ti.rowText(), m.ti.name, m.ti.pkMatch(1)), pk).Scan(&there)
	switch {
	case err == nil && there != text:
		return false, sqlerr.New(sqlerr.UniqueViolation, "%s has another row with this primary key", to)
	case err == pgx.ErrNoRows:
		var inserted bool
		if err := dst.QueryRow(ctx, m.ti.insertJSON(), rowJSON).Scan(&inserted); err == pgx.ErrNoRows {
			return false, sqlerr.New(sqlerr.UniqueViolation, "%s has another row with this primary key", to)
		} else if err != nil {
			return false, fmt.Errorf("insert on %s: %w", to, err)
		}
	case err != nil:
		return false, err
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s", m.ti.name, m.ti.pkMatch(1)), pk); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}

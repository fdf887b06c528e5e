package xwrite

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/intermediate"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// Session is what the executor needs of a client session inside a
// transaction: the same as package gsi's (connections that join the
// transaction as written ones, and the client).
type Session = gsi.Session

// Statement is one execution of an InsertSelect plan (or a RowWrite,
// rows.go, or a MergeSource, merge.go).
type Statement struct {
	Plan *planner.Plan
	// Source is the read of the plan's Source, with its parameters and a
	// Scratch connection for the coordinator; its Formats are the
	// client's result formats (of RETURNING), its Describe says to send
	// RETURNING's RowDescription first (simple protocol).
	Source  *intermediate.Statement
	Seqs    planner.SequenceSource
	Session Session

	is      *planner.InsertSelect
	n       int      // inserted columns of a source row
	types   rowTypes // how one row's values are bound
	batches batches
	count   int64
	// gsi: the entries of the rows inserted into a table with global
	// secondary indexes (nil: none); formats the batches' result formats
	// with the added columns, known (formatsSet) at the first batch.
	gsi        *gsi.Inserted
	formats    []int16
	formatsSet bool
}

// clusterOf names the cluster a row of t goes to (vschema.ClusterOfRow).
func clusterOf(t *vschema.Table, keyOf func(col string) (keyexpr.Value, bool)) (string, error) {
	return t.ClusterOfRow(keyOf)
}

// textValue is a key column's text value (nil: NULL).
func textValue(v []byte) keyexpr.Value {
	if v == nil {
		return keyexpr.Value{}
	}
	return keyexpr.Text(string(v))
}

// batches are the rows waiting, per cluster, in the order first seen.
type batches struct {
	of    map[string]*batch
	order []string
}

// add appends a row to cluster's batch and returns the batch.
func (bs *batches) add(cluster string, values [][]byte) *batch {
	if bs.of == nil {
		bs.of = map[string]*batch{}
	}
	b := bs.of[cluster]
	if b == nil {
		b = &batch{}
		bs.of[cluster] = b
		bs.order = append(bs.order, cluster)
	}
	b.rows = append(b.rows, values)
	for _, v := range values {
		b.bytes += len(v)
	}
	return b
}

// rowTypes are how the values of a batch row are bound: parameter types
// and formats, and placeholder suffixes ("" or "::type").
type rowTypes struct {
	oids     []uint32
	pformats []int16
	holders  []string
}

func (t *rowTypes) add(oid uint32, format int16, holder string) {
	t.oids, t.pformats, t.holders = append(t.oids, oid), append(t.pformats, format), append(t.holders, holder)
}

// values writes rows to q as "(ph, ...), (...)", numbering their
// placeholders after the parameters given, and returns the parameters
// with theirs added.
func (t *rowTypes) values(q *strings.Builder, rows [][][]byte, oids []uint32, formats []int16, params [][]byte) ([]uint32, []int16, [][]byte) {
	n, k := len(params), len(t.oids)
	for r, row := range rows {
		if r > 0 {
			q.WriteString(", ")
		}
		q.WriteByte('(')
		for i := range row {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("$" + strconv.Itoa(n+r*k+i+1) + t.holders[i])
		}
		q.WriteByte(')')
		oids, formats, params = append(oids, t.oids...), append(formats, t.pformats...), append(params, row...)
	}
	return oids, formats, params
}

// take empties cluster's batch and returns its rows.
func (bs *batches) take(cluster string) [][][]byte {
	b := bs.of[cluster]
	if b == nil {
		return nil
	}
	rows := b.rows
	b.rows, b.bytes = nil, 0
	return rows
}

// full reports a batch to send now: at its bound of rows or bytes, or
// one row short of Postgres's bound of parameters (perRow per row, fixed
// beside).
func (b *batch) full(perRow, fixed int) bool {
	return len(b.rows) >= maxBatchRows || (len(b.rows)+1)*perRow+fixed > maxParams || b.bytes >= maxBatchBytes
}

// batch is the rows waiting for one cluster (every copy for a reference
// table: the key "").
type batch struct {
	rows  [][][]byte
	bytes int
}

// Batch bounds: rows and bytes of parameters per INSERT.
const (
	maxBatchRows  = 1000
	maxBatchBytes = 1 << 20
	maxParams     = 65535
)

// Run executes the statement and returns its command tag.
func (st *Statement) Run() (string, error) {
	if rw, ok := st.Plan.Root.(*planner.RowWrite); ok {
		return st.runRows(rw)
	}
	if ms, ok := st.Plan.Root.(*planner.MergeSource); ok {
		return st.runMerge(ms)
	}
	st.is = st.Plan.Root.(*planner.InsertSelect)
	st.gsi = gsi.NewInserted(st.is.Table, st.is.Alias)
	// The source is read whole before the first row is written: its
	// coordinator connection then goes back before the session's
	// connections write, so the statement needs one connection per
	// cluster (see doc.go).
	read, err := st.readAll(st.start)
	if err != nil {
		return "", err
	}
	if st.Plan.Returns && st.Source.Describe {
		b, err := st.Session.Conn(st.is.Group.Clusters[0])
		if err != nil {
			return "", err
		}
		rd, err := st.Described(b)
		if err != nil {
			return "", err
		}
		if err := st.Session.Send(rd); err != nil {
			return "", err
		}
	}
	for i := range read {
		if err = st.row(read[i]); err != nil {
			break
		}
		read[i] = nil
	}
	for _, c := range st.batches.order {
		if err != nil {
			break
		}
		err = st.flush(c)
	}
	return "INSERT 0 " + strconv.FormatInt(st.count, 10), err
}

// Described returns the RowDescription of the statement's RETURNING in
// the client's formats, or NoData, as b (a connection to the target's
// first cluster) describes it.
func (st *Statement) Described(b *backend.Conn) (pgwire.Encodable, error) {
	return describeReturning(b, st.Plan.Root.(*planner.InsertSelect).Describe, st.Source.Formats)
}

// Described answers Describe of a plan run in steps for the extended
// protocol: src (with its Formats) is the intermediate read of the plan
// (planner.ReadOf); for an InsertSelect, the parameters are its source's
// and the columns those of its RETURNING (NoData without), described by
// the target's first cluster on a Scratch connection.
func Described(src *intermediate.Statement, plan *planner.Plan) (*pgproto3.ParameterDescription, pgwire.Encodable, error) {
	if rw, ok := plan.Root.(*planner.RowWrite); ok {
		return describedRows(src, rw)
	}
	if ms, ok := plan.Root.(*planner.MergeSource); ok {
		return describedMerge(src, ms) // MERGE returns no rows
	}
	pd, rd, err := src.Described()
	is, ok := plan.Root.(*planner.InsertSelect)
	if err != nil || !ok {
		return pd, rd, err
	}
	b, err := src.Scratch(is.Group.Clusters[0])
	if err != nil {
		return nil, nil, err
	}
	desc, err := (&Statement{Plan: plan, Source: src}).Described(b)
	return pd, desc, err
}

// start learns the source's columns: the types the rows' values are bound
// with.
func (st *Statement) start(desc *pgproto3.RowDescription, typeNames []string) error {
	st.n = len(desc.Fields) - len(st.is.KeyColumns)
	if st.n < 0 || len(st.is.Columns) > 0 && st.n > len(st.is.Columns) {
		return sqlerr.New(sqlerr.SyntaxError, "INSERT has more expressions than target columns")
	}
	if len(st.is.Columns) > 0 && st.n < len(st.is.Columns) {
		return sqlerr.New(sqlerr.SyntaxError, "INSERT has more target columns than expressions")
	}
	for i := 0; i < st.n; i++ {
		f := desc.Fields[i]
		if i < len(st.is.Untyped) && st.is.Untyped[i] { // text (or NULL): typed by the target column
			st.types.add(0, 0, "")
			continue
		}
		st.types.add(paramType(f, typeNames[i]))
	}
	if st.is.Seq != "" {
		st.types.add(20, 1, "")
	}
	return nil
}

// row routes one source row to its batch, flushing a full one.
func (st *Statement) row(vals [][]byte) error {
	is := st.is
	values := vals[:st.n:st.n]
	var drawn int64
	if is.Seq != "" {
		vs, err := st.Seqs.Next(is.Seq, 1)
		if err != nil {
			return err
		}
		drawn = vs[0]
		values = append(values, int8Binary(drawn))
	}
	cluster, err := clusterOf(is.Table, func(col string) (keyexpr.Value, bool) {
		for j, kc := range is.KeyColumns {
			if kc == col {
				return textValue(vals[st.n+j]), true
			}
		}
		if is.Seq != "" && keyexpr.QuoteIdentifier(col) == is.SeqColumn {
			return keyexpr.Int(drawn), true
		}
		return keyexpr.Value{}, false
	})
	if err != nil {
		return err
	}
	b := st.batches.add(cluster, values)
	if b.full(len(st.types.oids), 0) {
		return st.flush(cluster)
	}
	return nil
}

// flush inserts the batch of cluster ("": every copy) and counts its
// rows; RETURNING rows go to the client (one copy's).
func (st *Statement) flush(cluster string) error {
	rows := st.batches.take(cluster)
	if len(rows) == 0 {
		return nil
	}
	is := st.is
	var q strings.Builder
	q.WriteString(is.Target)
	if len(is.Columns) > 0 || is.SeqColumn != "" {
		cols := append([]string(nil), is.Columns...)
		if is.SeqColumn != "" {
			cols = append(cols, is.SeqColumn)
		}
		q.WriteString(" (" + strings.Join(cols, ", ") + ")")
	}
	q.WriteString(" VALUES ")
	oids, formats, params := st.types.values(&q, rows, nil, nil, nil)
	q.WriteString(is.Suffix)
	if st.gsi != nil {
		q.WriteString(st.gsi.Suffix(st.Plan.Returns))
	}
	clusters := []string{cluster}
	if cluster == "" {
		clusters = is.Group.Clusters
	}
	for i, c := range clusters {
		conn, err := st.Session.Conn(c)
		if err != nil {
			return err
		}
		results, err := st.resultFormats(conn)
		if err != nil {
			return err
		}
		intermediate.Send(conn, &pgproto3.Parse{Query: q.String(), ParameterOIDs: oids},
			&pgproto3.Bind{ParameterFormatCodes: formats, Parameters: params, ResultFormatCodes: results},
			&pgproto3.Execute{}, &pgproto3.Sync{})
		err = st.relay(conn, i == 0, &st.count)
		if err != nil {
			return err
		}
	}
	if st.gsi != nil {
		return st.gsi.Maintain(st.Session)
	}
	return nil
}

// resultFormats are the batches' result formats: the client's, with text
// for the columns a target with secondary indexes adds (its own counted
// on conn, once, for one format for all).
func (st *Statement) resultFormats(conn *backend.Conn) ([]int16, error) {
	if st.gsi == nil {
		return st.Source.Formats, nil
	} else if st.formatsSet {
		return st.formats, nil
	}
	f, err := st.gsi.Formats(st.Plan.Returns, st.Source.Formats, func() (int, error) {
		rd, err := describeReturning(conn, st.is.Describe, nil)
		if d, ok := rd.(*pgproto3.RowDescription); ok {
			return len(d.Fields), err
		}
		return 0, err
	})
	st.formats, st.formatsSet = f, err == nil
	return f, err
}

// relay reads one batch's answer from conn: notices to the client, and,
// from the first copy (first), RETURNING rows to the client and the
// command tag's count added to count.
func (st *Statement) relay(conn *backend.Conn, first bool, count *int64) error {
	return intermediate.Read(conn, func(m pgwire.RawMessage) error {
		switch {
		case m.Type == 'N':
			st.Session.SendRaw(m.Type, m.Body)
		case !first:
		case m.Type == 'D' && st.gsi != nil:
			vals, err := pgwire.ParseDataRow(m.Body)
			if err != nil {
				conn.Broken = true
				return err
			}
			if dr := st.gsi.Split(vals); st.Plan.Returns {
				_ = st.Session.Send(dr) // a client gone shows at the statement's end
			}
		case m.Type == 'D' && st.Plan.Returns:
			st.Session.SendRaw(m.Type, m.Body)
		case m.Type == 'C':
			_, n, _ := pgwire.SplitTag(m.Body)
			*count += n
		}
		return nil
	})
}

// readAll reads the source's rows (start learns its columns), bounded by
// the source's max_bytes.
func (st *Statement) readAll(start func(*pgproto3.RowDescription, []string) error) ([][][]byte, error) {
	var rows [][][]byte
	var size int64
	limit := st.Source.Limits.MaxBytes
	err := st.Source.Stream(start, func(vals [][]byte) error {
		for _, v := range vals {
			size += int64(len(v)) + 4
		}
		if limit > 0 && size > limit {
			return sqlerr.New("54000", "the rows a write reads exceed proxy.intermediate.max_bytes (%d bytes)", limit).
				WithDetail("The proxy holds a write's source rows until it has read them all.").
				WithHint("Raise proxy.intermediate.max_bytes, or write the rows in smaller statements.")
		}
		rows = append(rows, vals)
		return nil
	})
	return rows, err
}

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
)

// Session is what the executor needs of a client session inside a
// transaction: the same as package gsi's (connections that join the
// transaction as written ones, and the client).
type Session = gsi.Session

// Statement is one execution of an InsertSelect plan.
type Statement struct {
	Plan *planner.Plan
	// Source is the read of the plan's Source, with its parameters and a
	// Scratch connection for the coordinator; its Formats are the
	// client's result formats (of RETURNING), its Describe says to send
	// RETURNING's RowDescription first (simple protocol).
	Source  *intermediate.Statement
	Seqs    planner.SequenceSource
	Session Session

	is       *planner.InsertSelect
	n        int      // inserted columns of a source row
	oids     []uint32 // parameter types of one row
	pformats []int16  // parameter formats of one row
	holders  []string // placeholder suffixes ("" or "::type") of one row
	batches  map[string]*batch
	order    []string
	count    int64
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
	st.is = st.Plan.Root.(*planner.InsertSelect)
	st.batches = map[string]*batch{}
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
	err := st.Source.Stream(st.start, st.row)
	for _, c := range st.order {
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
	is := st.Plan.Root.(*planner.InsertSelect)
	if is.Describe == "" {
		return &pgproto3.NoData{}, nil
	}
	rd, err := intermediate.DescribeRows(b, &pgproto3.Parse{Query: is.Describe})
	if err != nil {
		return nil, err
	}
	intermediate.ApplyFormats(rd, st.Source.Formats)
	return rd, nil
}

// Described answers Describe of a plan run in steps for the extended
// protocol: src (with its Formats) is the intermediate read of the plan
// (planner.ReadOf); for an InsertSelect, the parameters are its source's
// and the columns those of its RETURNING (NoData without), described by
// the target's first cluster on a Scratch connection.
func Described(src *intermediate.Statement, plan *planner.Plan) (*pgproto3.ParameterDescription, pgwire.Encodable, error) {
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
			st.oids, st.pformats, st.holders = append(st.oids, 0), append(st.pformats, 0), append(st.holders, "")
			continue
		}
		if typeNames[i] != "" {
			st.oids, st.pformats, st.holders = append(st.oids, 0), append(st.pformats, 0), append(st.holders, "::"+typeNames[i])
			continue
		}
		st.oids, st.pformats, st.holders = append(st.oids, f.DataTypeOID), append(st.pformats, f.Format), append(st.holders, "")
	}
	if st.is.Seq != "" {
		st.oids, st.pformats, st.holders = append(st.oids, 20), append(st.pformats, 1), append(st.holders, "")
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
		v := make([]byte, 8)
		for i := 0; i < 8; i++ {
			v[i] = byte(uint64(drawn) >> (56 - 8*i))
		}
		values = append(values, v)
	}
	cluster := ""
	switch {
	case is.Table.Sharded():
		key, err := is.Table.KeyFromColumns(func(col string) (keyexpr.Value, bool) {
			for j, kc := range is.KeyColumns {
				if kc == col {
					if vals[st.n+j] == nil {
						return keyexpr.Value{}, true
					}
					return keyexpr.Text(string(vals[st.n+j])), true
				}
			}
			if is.Seq != "" && keyexpr.QuoteIdentifier(col) == is.SeqColumn {
				return keyexpr.Int(drawn), true
			}
			return keyexpr.Value{}, false
		})
		if err != nil {
			if sqlerr.Code(err) == sqlerr.NullValueNotAllowed {
				err = sqlerr.New(sqlerr.NotNullViolation, "null value in shard key column of table %q", is.Table.Name).
					WithDetail("A row without a shard key has no shard to live on.")
			}
			return err
		}
		sh, err := is.Group.ShardFor(key)
		if err != nil {
			return err
		}
		cluster = sh.Cluster
	case !is.Table.Reference:
		cluster = is.Group.Clusters[0]
	}
	b := st.batches[cluster]
	if b == nil {
		b = &batch{}
		st.batches[cluster] = b
		st.order = append(st.order, cluster)
	}
	b.rows = append(b.rows, values)
	for _, v := range values {
		b.bytes += len(v)
	}
	if len(b.rows) >= maxBatchRows || (len(b.rows)+1)*len(st.oids) > maxParams || b.bytes >= maxBatchBytes {
		return st.flush(cluster)
	}
	return nil
}

// flush inserts the batch of cluster ("": every copy) and counts its
// rows; RETURNING rows go to the client (one copy's).
func (st *Statement) flush(cluster string) error {
	b := st.batches[cluster]
	if b == nil || len(b.rows) == 0 {
		return nil
	}
	rows := b.rows
	b.rows, b.bytes = nil, 0
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
	k := len(st.oids)
	oids := make([]uint32, 0, k*len(rows))
	formats := make([]int16, 0, k*len(rows))
	params := make([][]byte, 0, k*len(rows))
	for r, row := range rows {
		if r > 0 {
			q.WriteString(", ")
		}
		q.WriteByte('(')
		for i := range row {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("$" + strconv.Itoa(r*k+i+1) + st.holders[i])
		}
		q.WriteByte(')')
		oids, formats, params = append(oids, st.oids...), append(formats, st.pformats...), append(params, row...)
	}
	q.WriteString(is.Suffix)
	clusters := []string{cluster}
	if cluster == "" {
		clusters = is.Group.Clusters
	}
	for i, c := range clusters {
		conn, err := st.Session.Conn(c)
		if err != nil {
			return err
		}
		intermediate.Send(conn, &pgproto3.Parse{Query: q.String(), ParameterOIDs: oids},
			&pgproto3.Bind{ParameterFormatCodes: formats, Parameters: params, ResultFormatCodes: st.Source.Formats},
			&pgproto3.Execute{}, &pgproto3.Sync{})
		first := i == 0
		err = intermediate.Read(conn, func(m pgwire.RawMessage) error {
			switch {
			case m.Type == 'N':
				st.Session.SendRaw(m.Type, m.Body)
			case !first:
			case m.Type == 'D' && st.Plan.Returns:
				st.Session.SendRaw(m.Type, m.Body)
			case m.Type == 'C':
				_, n, _ := pgwire.SplitTag(m.Body)
				st.count += n
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

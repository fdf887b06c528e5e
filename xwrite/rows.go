package xwrite

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/intermediate"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// rowWrite executes a RowWrite plan: the target's primary key from the
// catalog, the source read with one row per target row, the rows updated
// or deleted by key on their clusters in batches.
type rowWrite struct {
	st *Statement
	rw *planner.RowWrite

	pk      []string // the primary key's columns, quoted
	pkPos   []int    // their positions in a source row
	keyPos  []int    // the positions of the shard key's text values
	vals    []int    // the positions of a batch row's values: pk, then computed
	types   rowTypes // how they are bound
	batches batches
	count   int64
}

// primaryKey reads the quoted primary-key columns of the target from b.
func primaryKey(b *backend.Conn, rw *planner.RowWrite) ([]string, error) {
	rows, err := b.Query(`SELECT a.attname FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indisprimary AND i.indrelid = ` + pgwire.QuoteLiteral(rw.Table.String()) + `::pg_catalog.regclass ORDER BY pg_catalog.array_position(i.indkey::pg_catalog.int2[], a.attnum)`)
	if err != nil {
		return nil, pgwire.Annotate(err, b.Cluster())
	}
	if len(rows) == 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s of %s across groups needs a primary key on %s", verb(rw), rw.Table, rw.Table).
			WithDetail("%s", rw.Cause).
			WithHint("Add a primary key to %s: the proxy writes the rows it matched by their key.", rw.Table)
	}
	pk := make([]string, len(rows))
	for i, r := range rows {
		pk[i] = keyexpr.QuoteIdentifier(string(r[0]))
	}
	return pk, nil
}

// keyUpdate reports an UPDATE that sets a column of a unique key of its
// target, as Postgres counts the columns a foreign key may reference (a
// unique index without expressions or predicate, its key columns): its
// rows are locked FOR UPDATE, the others' FOR NO KEY UPDATE.
func keyUpdate(b *backend.Conn, rw *planner.RowWrite) (bool, error) {
	if rw.Delete || len(rw.Sets) == 0 {
		return false, nil
	}
	rows, err := b.Query(`SELECT DISTINCT a.attname FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid
WHERE i.indrelid = ` + pgwire.QuoteLiteral(rw.Table.String()) + `::pg_catalog.regclass AND i.indisunique AND i.indexprs IS NULL AND i.indpred IS NULL
AND a.attnum = ANY ((i.indkey::pg_catalog.int2[])[0:i.indnkeyatts - 1])`)
	if err != nil {
		return false, pgwire.Annotate(err, b.Cluster())
	}
	for _, r := range rows {
		for _, c := range rw.Sets {
			if keyexpr.QuoteIdentifier(string(r[0])) == c {
				return true, nil
			}
		}
	}
	return false, nil
}

// sourcePlan is the source read with the primary key put in (DISTINCT ON
// the key; for Describe, none), its pull of the target locking FOR
// UPDATE if keyLock, and params the source reads: the inline parameters
// as NULL text, so that they need no type there.
func sourcePlan(rw *planner.RowWrite, pk []string, alias string, keyLock bool) *planner.Plan {
	im := *rw.Source.Root.(*planner.Intermediate)
	if keyLock {
		im.Pulls = append([]planner.Pull(nil), im.Pulls...)
		for i := range im.Pulls {
			if im.Pulls[i].Lock != "" {
				im.Pulls[i].Lock = planner.LockUpdate
			}
		}
	}
	on := ""
	if pk != nil {
		cols := make([]string, len(pk))
		for i, c := range pk {
			cols[i] = keyexpr.QuoteIdentifier(alias) + "." + c
		}
		on = "DISTINCT ON (" + strings.Join(cols, ", ") + ")"
	}
	im.SQL = strings.Replace(im.SQL, planner.DistinctPlaceholder, on, 1)
	src := *rw.Source
	src.Root = &im
	return &src
}

// sourceParams are the client's parameters as the source binds them.
func sourceParams(rw *planner.RowWrite, params []planner.Param) []planner.Param {
	if len(rw.InlineParams) == 0 || params == nil {
		return params
	}
	out := append([]planner.Param(nil), params...)
	for _, i := range rw.InlineParams {
		if i < len(out) {
			out[i] = planner.Param{Null: true, OID: 25}
		}
	}
	return out
}

// runRows executes a RowWrite and returns its command tag.
func (st *Statement) runRows(rw *planner.RowWrite) (string, error) {
	w := &rowWrite{st: st, rw: rw}
	b, err := st.Session.Conn(rw.Group.Clusters[0])
	if err != nil {
		return "", err
	}
	if w.pk, err = primaryKey(b, rw); err != nil {
		return "", err
	}
	keyLock, err := keyUpdate(b, rw)
	if err != nil {
		return "", err
	}
	if st.Plan.Returns && st.Source.Describe {
		rd, err := describeReturning(b, rw.Describe, st.Source.Formats)
		if err != nil {
			return "", err
		}
		if err := st.Session.Send(rd); err != nil {
			return "", err
		}
	}
	client := st.Source.Params
	st.Source.Plan, st.Source.Params = sourcePlan(rw, w.pk, rw.Alias, keyLock), sourceParams(rw, client)
	defer func() { st.Source.Params = client }()
	read, err := st.readAll(w.start)
	st.Source.Params = client
	for i := range read {
		if err != nil {
			break
		}
		err = w.row(read[i])
		read[i] = nil
	}
	for _, c := range w.batches.order {
		if err != nil {
			break
		}
		err = w.flush(c)
	}
	return verb(rw) + " " + strconv.FormatInt(w.count, 10), err
}

func verb(rw *planner.RowWrite) string {
	if rw.Delete {
		return "DELETE"
	}
	return "UPDATE"
}

// describeReturning is the RowDescription of a RETURNING (NoData
// without one) in the client's formats, as b describes it.
func describeReturning(b *backend.Conn, describe string, formats []int16) (pgwire.Encodable, error) {
	if describe == "" {
		return &pgproto3.NoData{}, nil
	}
	rd, err := intermediate.DescribeRows(b, &pgproto3.Parse{Query: describe})
	if err != nil {
		return nil, err
	}
	intermediate.ApplyFormats(rd, formats)
	return rd, nil
}

// start finds the primary key and shard key in the source's columns and
// the types the values are bound with.
func (w *rowWrite) start(desc *pgproto3.RowDescription, typeNames []string) error {
	rw := w.rw
	k := len(rw.Computed)
	for j := range rw.KeyColumns {
		w.keyPos = append(w.keyPos, k+j)
	}
	row := k + len(rw.KeyColumns) + rw.Checks
	for _, c := range w.pk {
		at := -1
		for i := row; i < len(desc.Fields); i++ {
			if keyexpr.QuoteIdentifier(string(desc.Fields[i].Name)) == c {
				at = i
				break
			}
		}
		if at < 0 {
			return sqlerr.New(sqlerr.InternalError, "the primary key column %s of %s is not in the rows read", c, rw.Table)
		}
		w.pkPos = append(w.pkPos, at)
	}
	w.vals = append(append(w.vals, w.pkPos...), seq(k)...)
	for _, i := range w.vals {
		w.types.add(paramType(desc.Fields[i], typeNames[i]))
	}
	return nil
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// paramType is how a value of a source column is bound: a built-in type
// in the binary format with its OID, any other as text cast to the type's
// name on the coordinator.
func paramType(f pgproto3.FieldDescription, typeName string) (uint32, int16, string) {
	if typeName != "" {
		return 0, 0, "::" + typeName
	}
	return f.DataTypeOID, f.Format, ""
}

// row routes one target row to its cluster's batch, flushing a full one.
func (w *rowWrite) row(vals [][]byte) error {
	rw := w.rw
	cluster, err := clusterOf(rw.Table, func(col string) (keyexpr.Value, bool) {
		for j, kc := range rw.KeyColumns {
			if kc == col {
				return textValue(vals[w.keyPos[j]]), true
			}
		}
		return keyexpr.Value{}, false
	})
	if err != nil {
		return err
	}
	values := make([][]byte, len(w.vals))
	for i, at := range w.vals {
		values[i] = vals[at]
	}
	b := w.batches.add(cluster, values)
	if b.full(len(w.vals), len(rw.ApplyParams)) {
		return w.flush(cluster)
	}
	return nil
}

// flush applies the batch of cluster ("": every copy) and counts its
// rows; RETURNING rows go to the client (one copy's).
func (w *rowWrite) flush(cluster string) error {
	rows := w.batches.take(cluster)
	if len(rows) == 0 {
		return nil
	}
	rw, st := w.rw, w.st
	bind := planner.BindOf(st.Source.Params, rw.ApplyParams, st.Source.Formats)
	oids := planner.OIDsOf(st.Source.Params, rw.ApplyParams)
	formats := bind.ParameterFormatCodes
	params := bind.Parameters
	var q strings.Builder
	q.WriteString("(VALUES ")
	oids, formats, params = w.types.values(&q, rows, oids, formats, params)
	q.WriteString(") sg_v(")
	var match []string
	for i, c := range w.pk {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("sg_k" + strconv.Itoa(i+1))
		match = append(match, keyexpr.QuoteIdentifier(rw.Alias)+"."+c+" = sg_v.sg_k"+strconv.Itoa(i+1))
	}
	for i := range rw.Computed {
		q.WriteString(", sg_n" + strconv.Itoa(i+1))
	}
	q.WriteByte(')')
	sql := strings.Replace(rw.Apply, planner.ValuesPlaceholder, q.String(), 1)
	sql = strings.Replace(sql, planner.MatchPlaceholder, "("+strings.Join(match, " AND ")+")", 1)
	clusters := []string{cluster}
	if cluster == "" {
		clusters = rw.Group.Clusters
	}
	for i, c := range clusters {
		conn, err := st.Session.Conn(c)
		if err != nil {
			return err
		}
		intermediate.Send(conn, &pgproto3.Parse{Query: sql, ParameterOIDs: oids},
			&pgproto3.Bind{ParameterFormatCodes: formats, Parameters: params, ResultFormatCodes: st.Source.Formats},
			&pgproto3.Execute{}, &pgproto3.Sync{})
		if err := st.relay(conn, i == 0, &w.count); err != nil {
			return err
		}
	}
	return nil
}

// describedRows answers Describe of a RowWrite: the parameters as the
// source reads them, those only SET directly typed by their columns (the
// plan's Shape, described by the target's first cluster), and the
// columns of its RETURNING.
func describedRows(src *intermediate.Statement, rw *planner.RowWrite) (*pgproto3.ParameterDescription, pgwire.Encodable, error) {
	client := src.Params
	src.Plan, src.Params = sourcePlan(rw, nil, rw.Alias, false), sourceParams(rw, client)
	pd, _, err := src.Described()
	if err != nil {
		return nil, nil, err
	}
	b, err := src.Scratch(rw.Group.Clusters[0])
	if err != nil {
		return nil, nil, err
	}
	if rw.Shape != "" {
		oids := append([]uint32(nil), pd.ParameterOIDs...)
		for _, i := range rw.InlineParams {
			if i < len(oids) {
				oids[i] = 0
				if i < len(client) {
					oids[i] = client[i].OID
				}
			}
		}
		intermediate.Send(b, &pgproto3.Parse{Query: rw.Shape, ParameterOIDs: oids}, &pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Sync{})
		err := intermediate.Read(b, func(m pgwire.RawMessage) error {
			if m.Type != 't' {
				return nil
			}
			var d pgproto3.ParameterDescription
			if err := d.Decode(m.Body); err != nil {
				return err
			}
			for _, i := range rw.InlineParams {
				if i < len(d.ParameterOIDs) && i < len(pd.ParameterOIDs) {
					pd.ParameterOIDs[i] = d.ParameterOIDs[i]
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	rd, err := describeReturning(b, rw.Describe, src.Formats)
	return pd, rd, err
}

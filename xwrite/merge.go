package xwrite

import (
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/intermediate"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// mergeSource is one execution of a MergeSource plan: the source's rows,
// read whole, routed by their key to their clusters, each of which then
// runs the MERGE once with its rows as a VALUES source (see
// planner.MergeSource). One statement per cluster: a MERGE cut in two
// would match a row a first part inserted, or update a row twice where
// Postgres raises 21000.
type mergeSource struct {
	st      *Statement
	ms      *planner.MergeSource
	n       int      // the source's columns
	names   string   // their quoted names, for the alias
	pinned  string   // the cluster of every row (planner.MergeSource.Pinned)
	types   rowTypes // how one row's values are bound
	batches batches
	// client are the client's parameters (nil: simple protocol), of
	// which each cluster's MERGE binds MergeParams first.
	client []planner.Param
}

// pickParams are the parameters idx of params (nil: the simple
// protocol's, none).
func pickParams(params []planner.Param, idx []int) []planner.Param {
	if params == nil {
		return nil
	}
	out := make([]planner.Param, 0, len(idx))
	for _, k := range idx {
		if k < len(params) {
			out = append(out, params[k])
		}
	}
	return out
}

// untypedShared refuses a parameter both the source and the MERGE around
// it read whose type the client left to Postgres and never had
// described: Postgres types it where the source reads it, and each
// cluster's MERGE, without the source, would type it where the rest
// reads it, perhaps otherwise.
func untypedShared(ms *planner.MergeSource, params []planner.Param) error {
	for _, k := range ms.MergeParams {
		if k < len(params) && params[k].OID == 0 && slices.Contains(ms.SourceParams, k) {
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"MERGE into sharded table %s is not supported: parameter $%d, read both in its source and outside it, has no type the proxy knows", ms.Table, k+1).
				WithHint("Declare the parameter's type in Parse, or describe the statement before executing it, as most drivers do.")
		}
	}
	return nil
}

// runMerge executes a MergeSource plan and returns its command tag.
func (st *Statement) runMerge(ms *planner.MergeSource) (string, error) {
	w := &mergeSource{st: st, ms: ms, client: st.Source.Params}
	if err := untypedShared(ms, w.client); err != nil {
		return "", err
	}
	st.Source.Params = pickParams(w.client, ms.SourceParams)
	if ms.Pinned != nil {
		ts, err := ms.Pinned.Targets(w.client)
		if err != nil {
			return "", err
		}
		if len(ts) != 1 {
			return "", sqlerr.New(sqlerr.InternalError, "a MERGE pinned to one key planned %d clusters", len(ts))
		}
		w.pinned = ts[0].Cluster
	}
	read, err := st.readAll(w.start)
	if err != nil {
		return "", err
	}
	routed := 0
	var nulls [][][]byte
	for i, vals := range read {
		ok, err := w.row(vals)
		if err != nil {
			return "", err
		}
		if ok {
			routed++
		} else if ms.Inserts {
			nulls = append(nulls, vals[:w.n:w.n])
		}
		read[i] = nil
	}
	if len(nulls) > 0 {
		if err := w.nullKeys(nulls); err != nil {
			return "", err
		}
		routed += len(nulls)
	}
	if ms.Seq != "" && routed > 0 {
		drawn, err := st.Seqs.Next(ms.Seq, routed)
		if err != nil {
			return "", err
		}
		if len(drawn) != routed {
			return "", sqlerr.New(sqlerr.InternalError, "sequence %s gave %d values for %d rows", ms.Seq, len(drawn), routed)
		}
		at := 0
		for _, c := range w.batches.order {
			for r, row := range w.batches.of[c].rows {
				w.batches.of[c].rows[r] = append(row, int8Binary(drawn[at]))
				at++
			}
		}
	}
	var count int64
	if len(w.batches.order) == 0 {
		// No source row: the MERGE still runs once, over none, so that
		// what Postgres checks of the statement (the types ON and the
		// WHEN clauses compare) fails as it would in one database.
		cluster := w.pinned
		if cluster == "" {
			cluster = ms.Group.Clusters[0]
		}
		return "MERGE 0", w.merge(cluster, [][][]byte{make([][]byte, len(w.types.oids))}, true, &count)
	}
	for _, c := range w.batches.order {
		if err := w.merge(c, w.batches.take(c), false, &count); err != nil {
			return "", err
		}
	}
	return "MERGE " + strconv.FormatInt(count, 10), nil
}

// start learns the source's columns: their names (the alias's column
// list) and the types their values are bound with.
func (w *mergeSource) start(desc *pgproto3.RowDescription, typeNames []string) error {
	w.n = len(desc.Fields) - 1
	seen := map[string]bool{}
	names := make([]string, 0, w.n+1)
	for i := 0; i < w.n; i++ {
		f := desc.Fields[i]
		name := string(f.Name)
		if seen[name] {
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"MERGE into sharded table %s is not supported: its source has two columns named %q", w.ms.Table, name).
				WithHint("Give the source's columns distinct names.")
		}
		seen[name] = true
		names = append(names, keyexpr.QuoteIdentifier(name))
		w.types.add(paramType(f, typeNames[i]))
	}
	if w.ms.Seq != "" {
		if seen[planner.MergeSeqSource] {
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"MERGE into sharded table %s is not supported: its source has a column named %q, which the proxy uses for the values it draws from %s",
				w.ms.Table, planner.MergeSeqSource, w.ms.Seq)
		}
		names = append(names, planner.MergeSeqSource)
		w.types.add(20, 1, "")
	}
	w.names = strings.Join(names, ", ")
	return nil
}

// row routes one source row to its cluster's rows; false: a row whose key
// is NULL (see nullKeys).
func (w *mergeSource) row(vals [][]byte) (bool, error) {
	ms := w.ms
	key := vals[w.n]
	if w.pinned != "" {
		w.batches.add(w.pinned, vals[:w.n:w.n])
		return true, nil
	}
	if key == nil {
		return false, nil
	}
	cluster, err := clusterOf(ms.Table, func(col string) (keyexpr.Value, bool) {
		if col == ms.KeyColumn {
			return textValue(key), true
		}
		return keyexpr.Value{}, false
	})
	if err != nil {
		return false, err
	}
	w.batches.add(cluster, vals[:w.n:w.n])
	return true, nil
}

// nullKeys places the source rows whose key is NULL, of a MERGE with a
// WHEN NOT MATCHED THEN INSERT (without one they are left out: they match
// no target row). They match no row on any cluster; the row an INSERT
// makes of one has a NULL key. When the target's key column is NOT NULL,
// that INSERT fails (23502) wherever it runs, so the rows go to one
// cluster (one the statement writes already, if any) and run there as
// in one database; otherwise the row would have no shard: 0A000.
func (w *mergeSource) nullKeys(rows [][][]byte) error {
	ms := w.ms
	cluster := ms.Group.Clusters[0]
	if len(w.batches.order) > 0 {
		cluster = w.batches.order[0]
	}
	conn, err := w.st.Session.Conn(cluster)
	if err != nil {
		return err
	}
	rel := keyexpr.QuoteIdentifier(ms.Table.Name)
	if ms.Table.Schema != "" {
		rel = keyexpr.QuoteIdentifier(ms.Table.Schema) + "." + rel
	}
	found, err := conn.Query("SELECT a.attnotnull FROM pg_catalog.pg_attribute a WHERE a.attrelid = pg_catalog.to_regclass(" +
		pgwire.QuoteLiteral(rel) + ") AND a.attname = " + pgwire.QuoteLiteral(ms.KeyColumn))
	if err != nil {
		return err
	}
	if len(found) != 1 || string(found[0][0]) != "t" {
		return sqlerr.New(sqlerr.FeatureNotSupported,
			"MERGE into sharded table %s is not supported: a source row's %s is NULL, and the row its WHEN NOT MATCHED THEN INSERT could insert would have no shard", ms.Table, ms.SourceKey).
			WithDetail("Column %q of %s may be NULL.", ms.KeyColumn, ms.Table).
			WithHint("Leave out the source rows without a key (WHERE %s IS NOT NULL in the source), or declare %s NOT NULL.", ms.SourceKey, ms.KeyColumn)
	}
	for _, r := range rows {
		w.batches.add(cluster, r)
	}
	return nil
}

// merge runs the MERGE on cluster with rows as its source (none: the
// rows only type the source's columns) and adds its count.
func (w *mergeSource) merge(cluster string, rows [][][]byte, none bool, count *int64) error {
	if len(rows)*len(w.types.oids)+len(w.ms.MergeParams) > maxParams {
		return sqlerr.New(sqlerr.FeatureNotSupported,
			"MERGE into sharded table %s is not supported: cluster %s would merge %d source rows of %d columns, more than the %d parameters of one statement",
			w.ms.Table, cluster, len(rows), len(w.types.oids), maxParams).
			WithHint("Merge the rows in several statements, each with fewer source rows per cluster.")
	}
	sql, oids, formats, params := w.statement(rows, none)
	conn, err := w.st.Session.Conn(cluster)
	if err != nil {
		return err
	}
	intermediate.Send(conn, &pgproto3.Parse{Query: sql, ParameterOIDs: oids},
		&pgproto3.Bind{ParameterFormatCodes: formats, Parameters: params},
		&pgproto3.Execute{}, &pgproto3.Sync{})
	return w.st.relay(conn, true, count)
}

// statement is a cluster's MERGE with rows as its source (none: see
// merge), and its parameters: the client's MergeParams, then the rows'
// values.
func (w *mergeSource) statement(rows [][][]byte, none bool) (string, []uint32, []int16, [][]byte) {
	var q strings.Builder
	q.WriteString(w.ms.Head)
	if none {
		q.WriteString("(SELECT * FROM ")
	}
	q.WriteString("(VALUES ")
	bind := planner.BindOf(w.client, w.ms.MergeParams, nil)
	oids, formats, params := w.types.values(&q, rows, planner.OIDsOf(w.client, w.ms.MergeParams), bind.ParameterFormatCodes, bind.Parameters)
	q.WriteString(")")
	if none {
		q.WriteString(" AS shardgate_values LIMIT 0)")
	}
	q.WriteString(" AS " + w.ms.Alias + " (" + w.names + ")")
	q.WriteString(w.ms.Tail)
	return q.String(), oids, formats, params
}

// describedMerge answers Describe of a MergeSource: no rows, and the
// types of the client's parameters: those the source reads as its
// description gives them (the client's declared ones among them), the
// others as the MERGE around a source of no row, typed as the source's
// columns, gives them on the target's first cluster.
func describedMerge(src *intermediate.Statement, ms *planner.MergeSource) (*pgproto3.ParameterDescription, pgwire.Encodable, error) {
	client := src.Params
	src.Params = pickParams(client, ms.SourceParams)
	pd, rd, err := src.Described()
	if err != nil {
		return nil, nil, err
	}
	out := planner.OIDsOf(client, nil)
	for i, k := range ms.SourceParams {
		if i < len(pd.ParameterOIDs) && k < len(out) {
			out[k] = pd.ParameterOIDs[i]
		}
	}
	if len(ms.MergeParams) > 0 {
		typed := make([]planner.Param, len(out))
		for k, oid := range out {
			typed[k] = planner.Param{Null: true, OID: oid}
		}
		w := &mergeSource{ms: ms, client: typed}
		if err := w.start(rd, make([]string, len(rd.Fields))); err != nil {
			return nil, nil, err
		}
		b, err := src.Scratch(ms.Group.Clusters[0])
		if err != nil {
			return nil, nil, err
		}
		sql, oids, _, _ := w.statement([][][]byte{make([][]byte, len(w.types.oids))}, true)
		params, _, err := intermediate.DescribeStatement(b, sql, oids)
		if err != nil {
			return nil, nil, err
		}
		for j, k := range ms.MergeParams {
			if j < len(params) && k < len(out) {
				out[k] = params[j]
			}
		}
	}
	for k, oid := range out {
		if oid == 0 {
			return nil, nil, sqlerr.New("42P18", "could not determine data type of parameter $%d", k+1)
		}
	}
	return &pgproto3.ParameterDescription{ParameterOIDs: out}, &pgproto3.NoData{}, nil
}

// int8Binary is v in bigint's binary format.
func int8Binary(v int64) []byte {
	b := make([]byte, 8)
	for i := 0; i < 8; i++ {
		b[i] = byte(uint64(v) >> (56 - 8*i))
	}
	return b
}

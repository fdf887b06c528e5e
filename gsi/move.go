package gsi

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// runMove runs an UPDATE that changes the shard key (planner.GSIMove, the
// steps in planner/key_move.go): every target's matching rows are locked
// and read with their new values first; then on each target the rows
// whose new key stays on its cluster are updated in place and the others
// deleted; then the others are inserted on their new clusters, all in
// the session's transaction (two-phase across clusters). The client sees
// the UPDATE's answer: the count of rows updated or moved, the RETURNING
// of their new versions. sql and ext as for Run.
func runMove(s Session, plan *planner.Plan, sql string, targets []planner.Target, ext *Bound) error {
	w := plan.GSI
	t := w.Tables[0]
	// g: the lock's columns of old entries after ctid (key and values),
	// also added to the RETURNING of the rows written.
	g, gcols := 0, ""
	if len(w.Indexes) > 0 {
		g, gcols = returning(t, w.Alias)
	}
	var old []row     // the locked rows' old entries
	var cols []string // the target's columns, as the lock read them
	stay := make([][]string, len(targets))
	moved := make([][]string, len(targets))
	inserts := map[string][][][]byte{}
	var order []string
	for i, tg := range targets {
		b, err := s.Conn(tg.Cluster)
		if err != nil {
			return err
		}
		lock, _ := w.UpdateTexts(sql, ext == nil, nil)
		locked := &result{}
		if ext != nil {
			lt := planner.Target{Cluster: tg.Cluster, Shards: tg.Shards, SQL: lock, Params: w.LockParams}
			err = ext.send(b, lt, "", "", nil)
		} else {
			err = sendQuery(b, lock)
		}
		if err != nil {
			return err
		}
		if err := locked.read(s, b, tg); err != nil {
			return err
		}
		if len(locked.rows) == 0 {
			continue
		}
		n := len(w.Sets)
		if cols == nil {
			if locked.desc == nil { // the extended protocol: described apart
				if locked.desc, err = describe(b, lock, planner.OIDsOf(ext.Params, w.LockParams)); err != nil {
					return b.ClusterErr(err)
				} else if locked.desc == nil || len(locked.desc.Fields) < 1+g+n {
					return sqlerr.New(sqlerr.InternalError, "the rows of %s to move were read without their columns", t)
				}
			}
			for _, f := range locked.desc.Fields[1+g+n:] {
				cols = append(cols, string(f.Name))
			}
		}
		seen := map[string]bool{}
		for _, r := range locked.rows {
			ctid := string(r.values[0])
			if seen[ctid] { // joined to several FROM rows: moved once
				continue
			}
			seen[ctid] = true
			if g > 0 {
				old = append(old, row{stmtRow: -1, values: r.values[1 : 1+g]})
			}
			row := append([][]byte(nil), r.values[1+g+n:]...)
			for j, c := range w.Sets {
				for k, name := range cols {
					if name == c {
						row[k] = r.values[1+g+j]
					}
				}
			}
			dest, err := rowCluster(t, cols, row)
			if err != nil {
				return err
			}
			if dest == tg.Cluster {
				stay[i] = append(stay[i], ctid)
				continue
			}
			moved[i] = append(moved[i], ctid)
			if _, ok := inserts[dest]; !ok {
				order = append(order, dest)
			}
			inserts[dest] = append(inserts[dest], row)
		}
	}
	// In place and deleted, target by target.
	extra := len(t.KeyColumns())
	q := pgwire.QuoteIdent(w.Alias) + "."
	keys := make([]string, extra)
	for i, c := range t.KeyColumns() {
		keys[i] = q + pgwire.QuoteIdent(c)
	}
	if g > 0 {
		keys = append(keys, gcols)
	}
	suffix := "\nRETURNING " + strings.Join(keys, ", ")
	if plan.Returns {
		suffix = "\n, " + strings.Join(keys, ", ")
	}
	nkeys := extra
	extra += g
	res := &result{}
	for i, tg := range targets {
		_, update := w.UpdateTexts(sql, ext == nil, stay[i])
		one, err := runOwner(s, []planner.Target{{Cluster: tg.Cluster, Shards: tg.Shards, SQL: update}}, "", suffix, ext, plan.Returns, extra)
		if err != nil {
			return err
		}
		for _, r := range one.rows {
			// A volatile SET may compute another key than the lock did.
			at := len(r.values) - extra
			if c, err := rowCluster(t, t.KeyColumns(), r.values[at:at+nkeys]); err != nil || c != tg.Cluster {
				return moveRace(t, "a row updated in place got a shard key of another cluster than the one it was read with (a volatile function?)")
			}
		}
		if len(one.rows) != len(stay[i]) {
			return moveRace(t, strconv.Itoa(len(stay[i]))+" rows were locked to stay on "+tg.Cluster+", "+strconv.Itoa(len(one.rows))+" updated")
		}
		if res.desc == nil {
			res.desc = one.desc
		}
		res.rows = append(res.rows, one.rows...)
		if len(moved[i]) > 0 {
			if err := deleteMoved(s, tg.Cluster, t, moved[i]); err != nil {
				return err
			}
		}
	}
	count := int64(len(res.rows))
	var formats []int16
	if ext != nil {
		formats = ext.Formats
	}
	for _, dest := range order {
		rows, err := insertMoved(s, dest, w, cols, inserts[dest], formats, g, gcols)
		if err != nil {
			return err
		}
		for _, r := range rows {
			// The keys' places blank, the entries' columns as returned.
			values := append(r[:len(r)-g:len(r)-g], make([][]byte, nkeys)...)
			res.rows = append(res.rows, row{stmtRow: -1, values: append(values, r[len(r)-g:]...)})
		}
		count += int64(len(inserts[dest]))
	}
	if g > 0 {
		// Every locked row was updated in place or moved (counted above):
		// its old entries go, the new ones of the rows written come.
		if err := maintain(s, t, planner.GSIDelete, old, g); err != nil {
			return err
		}
		if err := maintain(s, t, planner.GSIInsert, res.rows, g); err != nil {
			return err
		}
	}
	res.tags = []string{"UPDATE " + strconv.FormatInt(count, 10)}
	return res.answer(s, plan.Returns, extra, ext == nil)
}

// rowCluster is the cluster of a row of t whose columns cols have the
// text values vals.
func rowCluster(t *vschema.Table, cols []string, vals [][]byte) (string, error) {
	return t.ClusterOfRow(func(col string) (keyexpr.Value, bool) {
		for i, c := range cols {
			if c == col {
				if vals[i] == nil {
					return keyexpr.Value{}, true
				}
				return keyexpr.Text(string(vals[i])), true
			}
		}
		return keyexpr.Value{}, false
	})
}

func moveRace(t *vschema.Table, what string) error {
	return sqlerr.New(sqlerr.SerializationFailure, "could not move the rows of %s to their new shards: %s", t, what).
		WithHint("Retry the transaction.")
}

func sendQuery(b *backend.Conn, sql string) error {
	if err := b.Send(&pgproto3.Query{String: sql}); err != nil {
		return pgwire.ConnLost(b.Cluster(), err)
	}
	if err := b.Flush(); err != nil {
		return pgwire.ConnLost(b.Cluster(), err)
	}
	return nil
}

// deleteMoved deletes the locked rows ctids of t from cluster.
func deleteMoved(s Session, cluster string, t *vschema.Table, ctids []string) error {
	b, err := s.Conn(cluster)
	if err != nil {
		return err
	}
	quoted := make([]string, len(ctids))
	for i, c := range ctids {
		quoted[i] = `"` + c + `"`
	}
	rows, err := b.Query("WITH d AS (DELETE FROM " + t.String() + " WHERE ctid = ANY(" +
		pgwire.QuoteLiteral("{"+strings.Join(quoted, ",")+"}") + "::pg_catalog.tid[]) RETURNING 1) SELECT pg_catalog.count(*) FROM d")
	if err != nil {
		return b.ClusterErr(err)
	}
	if len(rows) != 1 || string(rows[0][0]) != strconv.Itoa(len(ctids)) {
		return moveRace(t, "a locked row was not deleted on "+cluster)
	}
	return nil
}

// maxMoveParams bounds the parameters of one INSERT of moved rows.
const maxMoveParams = 30000

// insertMoved inserts the moved rows (text values of the columns cols,
// the generated ones left out) into the target on cluster, in batches,
// and returns their RETURNING rows in the client's formats, followed by
// the added columns added (RETURNING items addedCols, as text).
func insertMoved(s Session, cluster string, w *planner.GSIWork, cols []string, rows [][][]byte, formats []int16, added int, addedCols string) ([][][]byte, error) {
	b, err := s.Conn(cluster)
	if err != nil {
		return nil, err
	}
	t := w.Tables[0]
	gen, err := b.Query("SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = " + pgwire.QuoteLiteral(t.String()) +
		"::pg_catalog.regclass AND attnum > 0 AND NOT attisdropped AND attgenerated <> ''")
	if err != nil {
		return nil, b.ClusterErr(err)
	}
	skip := map[string]bool{}
	for _, g := range gen {
		skip[string(g[0])] = true
	}
	var keep []int
	var names []string
	for i, c := range cols {
		if !skip[c] {
			keep, names = append(keep, i), append(names, pgwire.QuoteIdent(c))
		}
	}
	per := max(1, maxMoveParams/max(1, len(keep)))
	var out [][][]byte
	described := false // the formats with the added columns'
	for len(rows) > 0 {
		part := rows[:min(per, len(rows))]
		rows = rows[len(part):]
		var q strings.Builder
		q.WriteString("INSERT INTO " + t.String() + " AS " + pgwire.QuoteIdent(w.Alias) + " (" + strings.Join(names, ", ") + ") OVERRIDING SYSTEM VALUE VALUES ")
		var params [][]byte
		for r, row := range part {
			if r > 0 {
				q.WriteString(", ")
			}
			q.WriteByte('(')
			for j, at := range keep {
				if j > 0 {
					q.WriteString(", ")
				}
				params = append(params, row[at])
				q.WriteString("$" + strconv.Itoa(len(params)))
			}
			q.WriteByte(')')
		}
		switch {
		case w.Returning != "" && added > 0:
			q.WriteString(" " + w.Returning + ", " + addedCols)
		case w.Returning != "":
			q.WriteString(" " + w.Returning)
		case added > 0:
			q.WriteString(" RETURNING " + addedCols)
		}
		if added > 0 && !described {
			described = true
			formats, err = addedFormats(formats, w.Returning != "", added, func() (int, error) {
				rd, err := describe(b, q.String(), nil)
				if err != nil {
					return 0, b.ClusterErr(err)
				} else if rd == nil {
					return 0, nil
				}
				return len(rd.Fields) - added, nil
			})
			if err != nil {
				return nil, err
			}
		}
		_ = b.Send(&pgproto3.Parse{Query: q.String()})
		_ = b.Send(&pgproto3.Bind{Parameters: params, ResultFormatCodes: formats})
		_ = b.Send(&pgproto3.Execute{})
		if err := b.Send(&pgproto3.Sync{}); err != nil {
			return nil, pgwire.ConnLost(b.Cluster(), err)
		}
		if err := b.Flush(); err != nil {
			return nil, pgwire.ConnLost(b.Cluster(), err)
		}
		res := &result{}
		if err := res.read(s, b, planner.Target{Cluster: cluster}); err != nil {
			return nil, err
		}
		for _, r := range res.rows {
			out = append(out, r.values)
		}
	}
	return out, nil
}

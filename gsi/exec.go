package gsi

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// Session is what the executor needs of a client session in a
// transaction.
type Session interface {
	// Conn returns the transaction's connection to cluster, joining the
	// cluster to the transaction as a written one.
	Conn(cluster string) (*backend.Conn, error)
	// Send sends a message to the client.
	Send(msg pgwire.Encodable) error
	// SendRaw passes a backend's message on to the client.
	SendRaw(typ byte, body []byte)
}

// Run executes a statement with lookup-table work (plan.GSI) in the
// session's transaction and sends the client its answer: targets are the
// statement's (sql is the text of those whose SQL is empty), resolved for
// the simple protocol, or for the extended protocol when ext, the client's
// Bind, is set (see extended.go).
func Run(s Session, plan *planner.Plan, sql string, targets []planner.Target, ext *Bound) error {
	w := plan.GSI
	switch w.Op {
	case planner.GSICreate, planner.GSIDrop, planner.GSITruncate:
		res, err := runOwner(s, targets, sql, "", ext, false, 0)
		if err != nil {
			return err
		}
		for _, t := range targets {
			conn := s.Conn
			if w.Op == planner.GSITruncate { // as the entries are written (service.go)
				conn = func(c string) (*backend.Conn, error) { return entryConn(s, c) }
			}
			b, err := conn(t.Cluster)
			if err != nil {
				return err
			}
			for _, owner := range w.Tables {
				for _, si := range owner.SecondaryIndexes {
					q := map[planner.GSIOp]string{planner.GSICreate: CreateSQL(si, w.IfNotExists),
						planner.GSIDrop: DropSQL(si), planner.GSITruncate: TruncateSQL(si)}[w.Op]
					if err := b.SimpleExec(q, nil); err != nil {
						return b.ClusterErr(err)
					}
				}
			}
		}
		return s.Send(&pgproto3.CommandComplete{CommandTag: []byte(res.tags[0])})
	}
	switch w.Op {
	case planner.GSIUpdate:
		return runUpdate(s, plan, sql, targets, ext)
	case planner.GSIMove:
		return runMove(s, plan, sql, targets, ext)
	}
	owner := w.Tables[0]
	extra, cols := returning(owner, w.Alias)
	if w.Upsert {
		extra, cols = extra+1, cols+", "+pgwire.QuoteIdent(w.Alias)+".xmax = 0"
	}
	suffix := "\nRETURNING " + cols
	if plan.Returns {
		suffix = "\n, " + cols
	}
	res, err := runOwner(s, targets, sql, suffix, ext, plan.Returns, extra)
	if err != nil {
		return err
	}
	rows, n := res.rows, extra
	if w.Upsert {
		rows, n = inserted(rows), extra-1
	}
	if err := maintain(s, owner, w.Op, rows, n); err != nil {
		return err
	}
	return res.answer(s, plan.Returns, extra, ext == nil)
}

// inserted keeps the rows an upsert inserted (its last column, xmax = 0,
// true), without that column: the rows it updated keep their entries.
func inserted(rows []row) []row {
	var out []row
	for _, r := range rows {
		if last := r.values[len(r.values)-1]; string(last) == "t" {
			out = append(out, row{stmtRow: r.stmtRow, values: r.values[:len(r.values)-1]})
		}
	}
	return out
}

// returning lists the columns added to the statement's RETURNING: the
// owner's key, then each index's value.
func returning(t *vschema.Table, alias string) (int, string) {
	q := pgwire.QuoteIdent(alias) + "."
	cols := []string{q + pgwire.QuoteIdent(t.KeyColumn)}
	for _, si := range t.SecondaryIndexes {
		cols = append(cols, si.Source(pgwire.QuoteIdent(alias)))
	}
	return len(cols), strings.Join(cols, ", ")
}

// row is one returned row and the statement row it belongs to (-1:
// unknown, keep arrival order).
type row struct {
	stmtRow int
	values  [][]byte
}

// result is what the owner statement answered on every target.
type result struct {
	desc *pgproto3.RowDescription
	rows []row
	tags []string
}

// runOwner runs the statement (each target's SQL, every statement of it
// with suffix appended) on every target in turn and collects the answer.
// Notices go to the client. ext: the extended protocol's Bind, with the
// statement's RETURNING (returns) and its extra added columns.
func runOwner(s Session, targets []planner.Target, sql, suffix string, ext *Bound, returns bool, extra int) (*result, error) {
	res := &result{}
	var formats []int16
	for i, t := range targets {
		b, err := s.Conn(t.Cluster)
		if err != nil {
			return nil, err
		}
		if ext != nil {
			if i == 0 {
				if formats, err = ext.resultFormats(b, t, sql, suffix, returns, extra); err != nil {
					return nil, b.ClusterErr(err)
				}
			}
			if err := ext.send(b, t, sql, suffix, formats); err != nil {
				return nil, err
			}
			if err := res.read(s, b, t); err != nil {
				return nil, err
			}
			continue
		}
		q := t.SQL
		if q == "" {
			q = sql
		}
		q += suffix
		if len(t.Each) > 0 {
			parts := make([]string, len(t.Each))
			for j, e := range t.Each {
				parts[j] = e.SQL + suffix
			}
			q = strings.Join(parts, ";\n")
		}
		if err := b.Send(&pgproto3.Query{String: q}); err != nil {
			return nil, pgwire.ConnLost(b.Cluster(), err)
		}
		if err := b.Flush(); err != nil {
			return nil, pgwire.ConnLost(b.Cluster(), err)
		}
		if err := res.read(s, b, t); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// read reads one target's answer up to ReadyForQuery.
func (res *result) read(s Session, b *backend.Conn, t planner.Target) error {
	var first error
	n, done := 0, 0 // rows of the target, statements completed
	for {
		m, err := b.Read()
		if err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
		switch m.Type {
		case 'T':
			if res.desc == nil {
				res.desc = &pgproto3.RowDescription{}
				if err := res.desc.Decode(m.Body); err != nil {
					b.Broken = true
					return err
				}
				res.desc = pgwire.CopyRowDescription(res.desc)
			}
		case 'D':
			vals, err := pgwire.ParseDataRow(m.Body)
			if err != nil {
				b.Broken = true
				return err
			}
			r := row{stmtRow: -1, values: vals}
			switch {
			case len(t.Each) > 0 && done < len(t.Each) && len(t.Each[done].Rows) == 1:
				r.stmtRow = t.Each[done].Rows[0]
			case len(t.Each) == 0 && n < len(t.Rows):
				r.stmtRow = t.Rows[n]
			}
			res.rows = append(res.rows, r)
			n++
		case 'C':
			res.tags = append(res.tags, string(m.Body[:len(m.Body)-1]))
			done++
		case 'E':
			if first == nil {
				first = pgwire.NewBackendError(m.Body, b.Cluster(), t.Shards)
			}
		case 'N':
			s.SendRaw(m.Type, m.Body)
		case 'S':
			b.Observe(m)
		case 'Z':
			b.Observe(m)
			return first
		}
	}
}

// answer sends the client the statement's own answer: its RETURNING rows
// without the added columns, in statement order, and the summed tag. desc:
// with their RowDescription (the simple protocol).
func (res *result) answer(s Session, returns bool, extra int, desc bool) error {
	if returns && desc && res.desc != nil {
		d := *res.desc
		d.Fields = d.Fields[:len(d.Fields)-extra]
		if err := s.Send(&d); err != nil {
			return err
		}
	}
	if returns {
		ordered := true
		for _, r := range res.rows {
			ordered = ordered && r.stmtRow >= 0
		}
		if ordered {
			sort.SliceStable(res.rows, func(i, j int) bool { return res.rows[i].stmtRow < res.rows[j].stmtRow })
		}
		for _, r := range res.rows {
			if err := s.Send(&pgproto3.DataRow{Values: r.values[:len(r.values)-extra]}); err != nil {
				return err
			}
		}
	}
	return s.Send(&pgproto3.CommandComplete{CommandTag: []byte(sumTags(res.tags))})
}

// sumTags adds up command tags of one kind: "INSERT 0 2" and "INSERT 0 1"
// make "INSERT 0 3", "DELETE 1" and "DELETE 4" "DELETE 5".
func sumTags(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	head, total := tags[0], 0
	if i := strings.LastIndexByte(head, ' '); i >= 0 {
		head = head[:i]
	}
	for _, t := range tags {
		if i := strings.LastIndexByte(t, ' '); i >= 0 {
			n, _ := strconv.Atoi(t[i+1:])
			total += n
		}
	}
	return fmt.Sprintf("%s %d", head, total)
}

// maintain writes (INSERT) or removes (DELETE) the entries of the owner
// rows the statement returned, whose last extra values are the key and
// then each index's value.
func maintain(s Session, owner *vschema.Table, op planner.GSIOp, rows []row, extra int) error {
	return maintainOnly(s, owner, op, rows, extra, owner.SecondaryIndexes)
}

// maintainOnly is maintain for the indexes only of owner.
func maintainOnly(s Session, owner *vschema.Table, op planner.GSIOp, rows []row, extra int, only []*vschema.SecondaryIndex) error {
	for i, si := range owner.SecondaryIndexes {
		if !slices.Contains(only, si) {
			continue
		}
		byCluster := map[string]*entries{}
		var order []string
		for _, r := range rows {
			base := len(r.values) - extra
			key, val := r.values[base], r.values[base+1+i]
			if val == nil {
				if si.IgnoreNulls || op == planner.GSIDelete {
					continue
				}
				// ignore_nulls: false refuses the row as a NOT NULL column would.
				return notNull(si)
			}
			cluster, err := clusterOf(si, string(val))
			if err != nil {
				return err
			}
			es := byCluster[cluster]
			if es == nil {
				es = &entries{}
				byCluster[cluster] = es
				order = append(order, cluster)
			}
			es.add(string(val), string(key))
		}
		for _, c := range order {
			if p := pendingOf(s); p != nil { // commit: best_effort (besteffort.go)
				if err := p.write(s, si, op, c, byCluster[c]); err != nil {
					return err
				}
				continue
			}
			b, err := entryConn(s, c)
			if err != nil {
				return err
			}
			if op == planner.GSIDelete {
				if err := remove(b, si, byCluster[c]); err != nil {
					return err
				}
				continue
			}
			es := byCluster[c]
			if si.Unique {
				if e := es.repeated(); e != nil {
					return duplicate(si, e.value)
				}
			}
			for _, part := range es.chunks(maxEntries) {
				if err := b.SimpleExec(insertSQL(si, part), nil); err != nil {
					return uniqueViolation(si, b.ClusterErr(err))
				}
			}
		}
	}
	return nil
}

// remove removes entries from b. One it does not find belongs to an owner
// row whose transaction is committed on the owner's cluster and not yet
// on the lookup's (the two commits of a two-phase commit are not seen at
// the same instant): the statement fails with a serialization failure,
// to be retried, rather than leave the entry behind.
//
// A backfilling index has no entries yet for the rows written before it
// was added: placeholders are inserted first (ON CONFLICT DO NOTHING,
// which waits for an entry in flight and keeps one committed), so the
// removal finds every entry, and removes the placeholders with them.
func remove(b *backend.Conn, si *vschema.SecondaryIndex, es *entries) error {
	if !si.Active {
		if err := b.SimpleExec(placeholderSQL(si, es), nil); err != nil {
			return b.ClusterErr(err)
		}
	}
	rows, err := b.Query(deleteSQL(si, es))
	if err != nil {
		return b.ClusterErr(err)
	}
	// (A backfilling unique index may have the value with another key: a
	// duplicate its backfill will report.)
	if si.Active && (len(rows) != 1 || string(rows[0][0]) != strconv.Itoa(len(es.list))) {
		return sqlerr.New(sqlerr.SerializationFailure,
			"could not remove the entries of global secondary index %s: a concurrent transaction is committing them", si.Name).
			WithHint("Retry the transaction.")
	}
	if si.Unique {
		return nil
	}
	if err := b.SimpleExec(zeroSQL(si, es), nil); err != nil {
		return b.ClusterErr(err)
	}
	return nil
}

// notNull is the 23502 of a NULL value in an index with ignore_nulls:
// false.
func notNull(si *vschema.SecondaryIndex) error {
	col := si.Column
	if len(si.Columns) > 0 {
		col = si.Label()
	}
	return &pgconn.PgError{Severity: "ERROR", Code: "23502",
		Message:        fmt.Sprintf("null value in column \"%s\" of relation \"%s\" violates not-null constraint", si.Label(), si.Table.Name),
		Detail:         fmt.Sprintf("Global secondary index %s does not ignore NULL values (ignore_nulls: false).", si.Name),
		SchemaName:     si.Table.Schema,
		TableName:      si.Table.Name,
		ColumnName:     col,
		ConstraintName: si.Name}
}

// duplicate is the 23505 of two rows of one statement with the same
// value of a unique index (and the same key: their entries are one).
func duplicate(si *vschema.SecondaryIndex, value string) error {
	return &pgconn.PgError{Severity: "ERROR", Code: "23505",
		Message:        fmt.Sprintf("duplicate key value violates unique constraint \"%s\"", si.Name),
		Detail:         fmt.Sprintf("Key (%s)=(%s) already exists.", si.Label(), si.Display(value)),
		SchemaName:     si.Table.Schema,
		TableName:      si.Table.Name,
		ConstraintName: si.Name}
}

// uniqueViolation turns the lookup table's duplicate primary key into the
// owner's unique violation, named after the index, as Postgres reports one
// of a unique index.
func uniqueViolation(si *vschema.SecondaryIndex, err error) error {
	var be *pgwire.BackendError
	var pe *pgconn.PgError
	code, detail := "", ""
	switch {
	case errors.As(err, &be):
		code, detail = be.Resp.Code, be.Resp.Detail
	case errors.As(err, &pe):
		code, detail = pe.Code, pe.Detail
	}
	if code != "23505" || !si.Unique {
		return err
	}
	switch head, tail := "Key ("+pgwire.QuoteIdent(si.Column)+")=(", ") already exists."; {
	case len(si.Columns) > 0 && strings.HasPrefix(detail, head) && strings.HasSuffix(detail, tail):
		// The composite's columns and values, as a unique index on them.
		detail = fmt.Sprintf("Key (%s)=(%s) already exists.", si.Label(), si.Display(detail[len(head):len(detail)-len(tail)]))
	case si.Expr != nil: // the lookup table's value column stands for the expression
		detail = strings.Replace(detail, "Key ("+pgwire.QuoteIdent(si.Column)+")=", "Key ("+si.Label()+")=", 1)
	}
	return &pgconn.PgError{Severity: "ERROR", Code: "23505",
		Message:        fmt.Sprintf("duplicate key value violates unique constraint \"%s\"", si.Name),
		Detail:         detail,
		SchemaName:     si.Table.Schema,
		TableName:      si.Table.Name,
		ConstraintName: si.Name}
}

// Narrow runs a plan's Lookup: reads the owners' keys from the lookup
// shards and keeps the targets on their shards (planner.Lookup.Narrow),
// for the simple protocol (sql: the client's statement) or, ext set, the
// extended one.
func Narrow(s Lender, plan *planner.Plan, params []planner.Param, targets []planner.Target, sql string, ext *Bound) ([]planner.Target, error) {
	simple := sql
	if ext != nil {
		simple = ""
	}
	owners, err := lookupOwners(s, plan.Lookup, params)
	if err != nil {
		return nil, err
	}
	return plan.Lookup.Narrow(targets, owners, simple)
}

// NarrowBound is Narrow for a statement bound by the client that the
// proxy runs on the owners' clusters as a prepared statement, the owners'
// keys bound as its last parameter (planner.Lookup.NarrowBound).
func NarrowBound(s Lender, plan *planner.Plan, params []planner.Param, targets []planner.Target) ([]planner.Target, error) {
	owners, err := lookupOwners(s, plan.Lookup, params)
	if err != nil {
		return nil, err
	}
	return plan.Lookup.NarrowBound(targets, owners, plan.NumParams)
}

// lookupOwners reads the owners' keys of lk's values from the lookup
// shards.
func lookupOwners(s Lender, lk *planner.Lookup, params []planner.Param) ([]string, error) {
	queries, err := lk.Queries(params)
	if err != nil {
		return nil, err
	}
	var owners []string
	for _, q := range queries {
		b, err := s.Lend(q.Cluster)
		if err != nil {
			return nil, err
		}
		if pc := pendingOf(s).LookupConn(q.Cluster); pc != nil {
			owners, err = lookup(pc, q, owners) // with the entries this transaction wrote
		} else if rb, done, rerr := readConn(s, lk, b); rerr != nil {
			err = rerr
		} else {
			owners, err = lookup(rb, q, owners)
			done()
		}
		s.Done(b)
		if err != nil {
			return nil, err
		}
	}
	return owners, nil
}

package workflows

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// relInfo is a published relation as the stream applies it.
type relInfo struct {
	tp      *TablePlan
	name    string // quoted
	cols    []string
	keyIdx  []int // relation column of each shard key column
	pkIdx   []int
	keyInPK bool
	rt      *router
	upsert  string
	delete  string
	// upsertIf is the upsert of a row only when its primary key is at
	// most a bound (the bound's parameters in place of boundParams);
	// pkTypes are the primary key columns' types.
	upsertIf string
	pkTypes  []string
	pkCond   string // the primary key columns = $1, $2, ...
	// fed are the targets this source sends the table's rows to: where
	// a row whose key is unknown may be.
	fed []int
}

// change is one statement for a target, with text parameters.
type change struct {
	sql  string
	args [][]byte
	kind byte // kindUpsert, kindTruncate or 0 (a DELETE or UPDATE by primary key)
}

const (
	kindUpsert   = 'i'
	kindTruncate = 't'
)

// boundParams stands for the bound's parameters in relInfo.upsertIf.
const boundParams = "\x00bound\x00"

// applier turns one source's pgoutput messages into statements per
// target and applies them per transaction.
type applier struct {
	r       *Runner
	source  string
	src     *pgx.Conn // the source's: names the types of columns added since the runner read the table (ddl.go)
	targets []*pgx.Conn
	applied []pglogrepl.LSN // per target: last applied transaction end
	rels    map[uint32]*relInfo
	ops     [][]change // per target, of the open transaction
	xid     uint32     // of the open transaction
	final   pglogrepl.LSN
	rows    map[string]*rowState // rows the open transaction changed (toast.go)
	ctx     context.Context
	flushed pglogrepl.LSN // end of the last group applied
	// cycles are, per target and table, the copy cycles the rows were
	// copied in: which rows a transaction changes (cycles.go).
	cycles []map[string]*tableCycles
	// pending are the changes of source transactions committed but not
	// yet applied, per target: several are applied as one target
	// transaction (flush), with the last one's end LSN.
	pending      [][]change
	pendingEnd   pglogrepl.LSN
	pendingN     int
	pendingSince time.Time
}

// Consecutive source transactions are applied together, up to
// groupChanges changes or groupWait after the first of them.
const (
	groupChanges = 2000
	groupWait    = 50 * time.Millisecond
)

func (a *applier) readApplied(ctx context.Context) error {
	a.applied = make([]pglogrepl.LSN, len(a.targets))
	for i, c := range a.targets {
		var s *string
		err := c.QueryRow(ctx, `SELECT applied_lsn::text FROM shardgate.workflow_target WHERE workflow_id = $1 AND source = $2 AND table_name = ''`,
			a.r.id, a.source).Scan(&s)
		if err != nil && err != pgx.ErrNoRows {
			return err
		}
		if s != nil {
			if a.applied[i], err = pglogrepl.ParseLSN(*s); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *applier) begin(m *pglogrepl.BeginMessage) {
	a.ops = make([][]change, len(a.targets))
	a.xid, a.final = m.Xid, m.FinalLSN
	a.rows = map[string]*rowState{}
}

// committed ends the open source transaction, which ends at end: its
// changes join the pending group, but for the targets that applied it
// already (a stream replayed after a restart).
func (a *applier) committed(end pglogrepl.LSN) {
	if a.pending == nil {
		a.pending = make([][]change, len(a.targets))
		a.pendingSince = time.Now()
	}
	for i, list := range a.ops {
		if len(list) == 0 || a.applied[i] >= end {
			continue
		}
		a.pending[i] = append(a.pending[i], list...)
		a.pendingN += len(list)
	}
	a.pendingEnd = end
	a.ops = nil
}

// due says whether the pending group should be applied now.
func (a *applier) due() bool {
	limit := groupChanges
	if a.r.groupLimit > 0 {
		limit = a.r.groupLimit
	}
	return a.pending != nil && (a.pendingN >= limit || time.Since(a.pendingSince) >= groupWait)
}

// flush applies the pending group: one transaction per target it touches,
// with the group's end LSN recorded in it, so a restart neither loses nor
// repeats it. It returns that end LSN (0: nothing was pending).
func (a *applier) flush(ctx context.Context) (pglogrepl.LSN, error) {
	if a.pending == nil {
		return 0, nil
	}
	end := a.pendingEnd
	for i, list := range a.pending {
		if len(list) == 0 {
			continue
		}
		b := &pgconn.Batch{}
		for _, c := range list {
			b.ExecParams(c.sql, c.args, nil, nil, nil)
		}
		b.ExecParams(`INSERT INTO shardgate.workflow_target (workflow_id, source, table_name, applied_lsn) VALUES ($1, $2, '', $3)
			ON CONFLICT (workflow_id, source, table_name) DO UPDATE SET applied_lsn = EXCLUDED.applied_lsn`,
			[][]byte{fmt.Appendf(nil, "%d", a.r.id), []byte(a.source), []byte(end.String())}, nil, nil, nil)
		if _, err := a.targets[i].PgConn().ExecBatch(ctx, b).ReadAll(); err != nil {
			return 0, fmt.Errorf("target %s: apply transactions up to %s from %s: %w", a.r.plan.Targets[i].Name, end, a.source, err)
		}
		a.applied[i] = end
	}
	a.pending, a.pendingN = nil, 0
	a.flushed = end
	if a.r.flushHook != nil {
		a.r.flushHook()
	}
	return end, nil
}

// add queues a change of the table for the targets, on each restricted
// to the rows the open transaction changes there: those whose copy did not
// see it.
func (a *applier) add(rel *relInfo, targets []int, c change) {
	table := rel.tp.Name.String()
	for _, i := range targets {
		if a.r.plan.reverse { // the stream back copied nothing: every change applies
			a.ops[i] = append(a.ops[i], c)
			continue
		}
		skip, upto := a.cycles[i][table].bound(a.xid)
		switch {
		case skip:
		case upto == nil:
			a.ops[i] = append(a.ops[i], c)
		default:
			a.ops[i] = append(a.ops[i], rel.bounded(c, upto))
		}
	}
}

// bounded restricts a change to rows whose primary key is at most upto
// (the bound compared by Postgres on the target, with the key's types).
func (rel *relInfo) bounded(c change, upto []string) change {
	args := slices.Clone(c.args)
	var ps []string
	for i, v := range upto {
		args = append(args, []byte(v))
		ps = append(ps, fmt.Sprintf("$%d::text::%s", len(args), rel.pkTypes[i]))
	}
	bound := strings.Join(ps, ", ")
	cond := fmt.Sprintf("(%s) <= (%s)", identList(pkNames(rel)), bound)
	switch c.kind {
	case kindUpsert:
		return change{sql: strings.Replace(rel.upsertIf, boundParams, bound, 1), args: args}
	case kindTruncate:
		return change{sql: "DELETE FROM " + rel.name + " WHERE " + cond, args: args}
	}
	return change{sql: c.sql + " AND " + cond, args: args}
}

func pkNames(rel *relInfo) []string {
	out := make([]string, len(rel.pkIdx))
	for i, ix := range rel.pkIdx {
		out[i] = rel.cols[ix]
	}
	return out
}

func (a *applier) change(msg pglogrepl.Message) error {
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		return a.relation(m)
	case *pglogrepl.InsertMessage:
		rel := a.rels[m.RelationID]
		to, err := rel.route(m.Tuple)
		if err != nil {
			return err
		}
		a.add(rel, to, change{sql: rel.upsert, args: values(m.Tuple), kind: kindUpsert})
		a.remember(rel, rel.pk(m.Tuple), m.Tuple)
	case *pglogrepl.UpdateMessage:
		return a.update(a.rels[m.RelationID], m)
	case *pglogrepl.DeleteMessage:
		rel := a.rels[m.RelationID]
		to, err := rel.route(m.OldTuple)
		if err != nil {
			to = rel.fed // the key is not in the old tuple: look everywhere
		}
		a.add(rel, to, change{sql: rel.delete, args: rel.pk(m.OldTuple)})
		a.remember(rel, rel.pk(m.OldTuple), nil)
	case *pglogrepl.TruncateMessage:
		return a.truncate(m)
	}
	return nil
}

func (a *applier) relation(m *pglogrepl.RelationMessage) (err error) {
	q := topology.QualifiedName{Schema: m.Namespace, Name: m.RelationName}
	tp := a.r.plan.table(q)
	if tp == nil {
		return sqlerr.New(sqlerr.InternalError, "change of table %s, which the workflow does not move", q)
	}
	ti := a.r.info[q]
	rel := &relInfo{tp: tp, name: qname(q), rt: newRouter(a.r.plan, tp), keyInPK: true}
	for i := range a.targets {
		if feeds(a.r.plan, tp, a.source, i) {
			rel.fed = append(rel.fed, i)
		}
	}
	for _, c := range m.Columns {
		rel.cols = append(rel.cols, c.Name)
	}
	for _, k := range rel.rt.cols {
		rel.keyIdx = append(rel.keyIdx, slices.Index(rel.cols, k))
		rel.keyInPK = rel.keyInPK && slices.Contains(ti.PK, k)
	}
	var conds, sets, ps, typed, pkParams []string
	for i, k := range ti.PK {
		rel.pkIdx = append(rel.pkIdx, slices.Index(rel.cols, k))
		conds = append(conds, fmt.Sprintf("%s = $%d", ident(k), i+1))
	}
	if slices.Contains(rel.keyIdx, -1) || slices.Contains(rel.pkIdx, -1) {
		return sqlerr.New(sqlerr.FeatureNotSupported, "table %s is published without its key columns", q)
	}
	types := make([]string, len(rel.cols))
	for i, c := range m.Columns {
		if types[i], err = a.columnType(ti, c); err != nil {
			return err
		}
	}
	for i, c := range rel.cols {
		ps = append(ps, fmt.Sprintf("$%d", i+1))
		typed = append(typed, fmt.Sprintf("$%d::%s", i+1, types[i]))
		if !slices.Contains(ti.PK, c) {
			sets = append(sets, fmt.Sprintf("%s = EXCLUDED.%s", ident(c), ident(c)))
		}
	}
	onConflict := "NOTHING"
	if len(sets) > 0 {
		onConflict = "UPDATE SET " + strings.Join(sets, ", ")
	}
	rel.upsert = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO %s",
		rel.name, identList(rel.cols), strings.Join(ps, ", "), identList(ti.PK), onConflict)
	for _, ix := range rel.pkIdx {
		rel.pkTypes = append(rel.pkTypes, types[ix])
		pkParams = append(pkParams, typed[ix])
	}
	rel.upsertIf = fmt.Sprintf("INSERT INTO %s (%s) SELECT %s WHERE (%s) <= (%s) ON CONFLICT (%s) DO %s",
		rel.name, identList(rel.cols), strings.Join(typed, ", "), strings.Join(pkParams, ", "), boundParams, identList(ti.PK), onConflict)
	rel.pkCond = strings.Join(conds, " AND ")
	rel.delete = fmt.Sprintf("DELETE FROM %s WHERE %s", rel.name, rel.pkCond)
	a.rels[m.RelationID] = rel
	return nil
}

// route returns the targets of a tuple; it fails when the tuple lacks a
// key column's value.
func (rel *relInfo) route(t *pglogrepl.TupleData) ([]int, error) {
	if t == nil {
		return nil, sqlerr.New(sqlerr.InternalError, "no tuple")
	}
	for i, ix := range rel.keyIdx {
		c := t.Columns[ix]
		if c.DataType != pglogrepl.TupleDataTypeText {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "change of %s without the value of key column %q", rel.tp.Name, rel.rt.cols[i])
		}
		rel.rt.vals[i] = keyexpr.Text(string(c.Data))
	}
	return rel.rt.route()
}

// pk returns a tuple's primary key values.
func (rel *relInfo) pk(t *pglogrepl.TupleData) [][]byte {
	out := make([][]byte, len(rel.pkIdx))
	for i, ix := range rel.pkIdx {
		out[i] = bytes.Clone(t.Columns[ix].Data)
	}
	return out
}

func values(t *pglogrepl.TupleData) [][]byte {
	out := make([][]byte, len(t.Columns))
	for i, c := range t.Columns {
		if c.DataType == pglogrepl.TupleDataTypeText {
			// Copied: the message's bytes are the replication connection's
			// read buffer, reused by the next message, and the change is
			// applied after later messages (at its group's flush).
			out[i] = bytes.Clone(c.Data)
		}
	}
	return out
}

// update applies an UPDATE: an upsert on the new row's target, and a
// delete of the old row wherever else it may be. Without the old key
// (the default replica identity sends it only when the primary key
// changes) a row whose shard key is not part of the primary key may have
// moved from any target this source feeds, so the delete goes to all of them.
func (a *applier) update(rel *relInfo, m *pglogrepl.UpdateMessage) error {
	to, err := rel.route(m.NewTuple)
	if err != nil {
		return err
	}
	var from []int
	oldPK := rel.pk(m.NewTuple)
	if m.OldTuple != nil {
		oldPK = rel.pk(m.OldTuple)
	}
	switch {
	case m.OldTuple != nil:
		if from, err = rel.route(m.OldTuple); err != nil {
			from = rel.fed
		}
	case rel.keyInPK || !rel.tp.Route.Sharded():
		from = to
	default:
		from = rel.fed
	}
	// Unchanged TOASTed values (toast.go): kept in place when the row
	// stays, else filled in.
	newTuple, missing := a.fillUnchanged(rel, m, oldPK)
	if missing && slices.Equal(from, to) && m.OldTuple == nil {
		a.add(rel, to, rel.updateKnown(newTuple))
		a.remember(rel, oldPK, newTuple)
		return nil
	}
	if missing {
		if err := a.fetchUnchanged(rel, from, to, oldPK, newTuple); err != nil {
			return err
		}
	}
	for _, i := range from {
		if m.OldTuple != nil || !slices.Contains(to, i) {
			a.add(rel, []int{i}, change{sql: rel.delete, args: oldPK})
		}
	}
	a.add(rel, to, change{sql: rel.upsert, args: values(newTuple), kind: kindUpsert})
	a.remember(rel, oldPK, newTuple)
	return nil
}

// updateKnown updates the columns an UPDATE sent, keeping the TOASTed ones
// it did not.
func (rel *relInfo) updateKnown(t *pglogrepl.TupleData) change {
	var sets, conds []string
	var args [][]byte
	for i, c := range t.Columns {
		if c.DataType == pglogrepl.TupleDataTypeToast || slices.Contains(rel.pkIdx, i) {
			continue
		}
		args = append(args, values(&pglogrepl.TupleData{Columns: []*pglogrepl.TupleDataColumn{c}})[0])
		sets = append(sets, fmt.Sprintf("%s = $%d", ident(rel.cols[i]), len(args)))
	}
	if len(sets) == 0 { // only TOASTed values besides the key, all unchanged
		sets = append(sets, fmt.Sprintf("%s = %s", ident(rel.cols[rel.pkIdx[0]]), ident(rel.cols[rel.pkIdx[0]])))
	}
	for _, ix := range rel.pkIdx {
		args = append(args, bytes.Clone(t.Columns[ix].Data))
		conds = append(conds, fmt.Sprintf("%s = $%d", ident(rel.cols[ix]), len(args)))
	}
	return change{sql: fmt.Sprintf("UPDATE %s SET %s WHERE %s", rel.name, strings.Join(sets, ", "), strings.Join(conds, " AND ")), args: args}
}

// truncate empties the relations on the targets this source feeds. A
// target that also takes the table's rows from other sources (a merge)
// cannot be emptied for one of them: the workflow stops with 0A000.
func (a *applier) truncate(m *pglogrepl.TruncateMessage) error {
	for _, id := range m.RelationIDs {
		rel := a.rels[id]
		for _, i := range rel.fed {
			if shared(a.r.plan, rel.tp, i) {
				return sqlerr.New(sqlerr.FeatureNotSupported, "TRUNCATE of %s on source %s: target cluster %s also takes its rows from other sources",
					rel.tp.Name, a.source, a.r.plan.Targets[i].Name).
					WithHint("Cancel the workflow and create it again: the copy starts from the table as it is now.")
			}
		}
		a.add(rel, rel.fed, change{sql: "TRUNCATE " + rel.name, kind: kindTruncate})
	}
	return nil
}

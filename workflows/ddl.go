package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/jackc/pglogrepl"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// DDL sent through the proxy on a table in a workflow (docs/workflows.md,
// "DDL during a workflow"). The proxy parses the statement (ParseDDL),
// reads the workflows in main (DDLWorkflowsSQL) and asks Decide: the
// statement is refused before it runs, or runs on the serving clusters
// as usual with, in its transaction on each of them, a transactional
// logical message (DDLMessageSQL). The stream of every workflow reading
// that cluster meets the message at the point of the stream where the
// statement committed and runs the statement on its targets there, in
// the target transaction of that source transaction (applier.ddl): the
// changes before it are applied with the old shape, those after it with
// the new one (pgoutput sends the relation anew after DDL).

// ddlPrefix is the prefix of the logical messages carrying DDL.
const ddlPrefix = "shardgate.ddl"

// DDL is a statement that changes tables, as a workflow sees it.
type DDL struct {
	// What names the statement in messages: "ALTER TABLE ... DROP COLUMN".
	What string
	// Tables are the tables it changes; none for a statement that names
	// an index only (DROP INDEX): it concerns every running workflow.
	Tables  []topology.QualifiedName
	display []string // the tables as written
	// Refuse: the stream cannot follow it (a rename, a type change).
	Refuse bool
	// Narrows: applied on a target before another source feeding that
	// target reached it, it could refuse that source's earlier changes
	// (DROP COLUMN, SET NOT NULL, a CHECK, a unique index, TRUNCATE).
	// Exact only where one source feeds each target.
	Narrows bool
	// Message: the stream needs the statement (TRUNCATE is streamed
	// already).
	Message bool
	// Columns are the columns it drops.
	Columns []string
	// Target is the statement the targets run: the statement as written,
	// with IF [NOT] EXISTS where it has one, so that a second source of a
	// merged target applying it again does nothing.
	Target string
	in     string // the first workflow holding the tables, for LostKey
}

// ddlMessage is the content of a DDL logical message.
type ddlMessage struct {
	SQL    string   `json:"sql"`
	Tables []string `json:"tables,omitempty"` // QualifiedName.String(); none: every target
}

// ParseDDL reads one statement. It returns nil for a statement that does
// not change a table's shape or contents as a whole.
func ParseDDL(sql string) (*DDL, error) {
	tree, err := pg.Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return nil, nil // the planner answered for it already
	}
	stmt := tree.Stmts[0].Stmt
	d := &DDL{Message: true}
	var target *pg.Node
	switch x := stmt.Node.(type) {
	case *pg.Node_AlterTableStmt:
		if x.AlterTableStmt.Objtype != pg.ObjectType_OBJECT_TABLE {
			return nil, nil
		}
		d.addTable(x.AlterTableStmt.Relation)
		c := proto.Clone(x.AlterTableStmt).(*pg.AlterTableStmt)
		for _, cmd := range c.Cmds {
			if at, ok := cmd.Node.(*pg.Node_AlterTableCmd); ok {
				d.alterCmd(at.AlterTableCmd)
			}
		}
		target = &pg.Node{Node: &pg.Node_AlterTableStmt{AlterTableStmt: c}}
	case *pg.Node_IndexStmt:
		ix := proto.Clone(x.IndexStmt).(*pg.IndexStmt)
		d.addTable(ix.Relation)
		d.What = "CREATE INDEX"
		switch {
		case ix.Concurrent:
			d.What, d.Refuse = "CREATE INDEX CONCURRENTLY", true
		case ix.Idxname == "":
			d.Narrows = true // no IF NOT EXISTS without a name: twice would be two indexes
		default:
			ix.IfNotExists = true
		}
		d.Narrows = d.Narrows || ix.Unique
		target = &pg.Node{Node: &pg.Node_IndexStmt{IndexStmt: ix}}
	case *pg.Node_DropStmt:
		ds := proto.Clone(x.DropStmt).(*pg.DropStmt)
		switch ds.RemoveType {
		case pg.ObjectType_OBJECT_TABLE:
			d.What, d.Refuse = "DROP TABLE", true
			for _, o := range ds.Objects {
				d.addNames(o)
			}
		case pg.ObjectType_OBJECT_INDEX:
			d.What = "DROP INDEX"
			if ds.Concurrent {
				d.What, d.Refuse = "DROP INDEX CONCURRENTLY", true
			}
			ds.MissingOk = true
			target = &pg.Node{Node: &pg.Node_DropStmt{DropStmt: ds}}
		default:
			return nil, nil
		}
	case *pg.Node_TruncateStmt:
		d.What, d.Narrows, d.Message = "TRUNCATE", true, false // streamed: apply.go
		for _, r := range x.TruncateStmt.Relations {
			if rv, ok := r.Node.(*pg.Node_RangeVar); ok {
				d.addTable(rv.RangeVar)
			}
		}
	case *pg.Node_RenameStmt:
		r := x.RenameStmt
		switch r.RenameType {
		case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_COLUMN, pg.ObjectType_OBJECT_TABCONSTRAINT:
		default:
			return nil, nil
		}
		d.What, d.Refuse = "ALTER TABLE ... RENAME", true
		d.addTable(r.Relation)
	case *pg.Node_AlterObjectSchemaStmt:
		if x.AlterObjectSchemaStmt.ObjectType != pg.ObjectType_OBJECT_TABLE {
			return nil, nil
		}
		d.What, d.Refuse = "ALTER TABLE ... SET SCHEMA", true
		d.addTable(x.AlterObjectSchemaStmt.Relation)
	default:
		return nil, nil
	}
	if target != nil && !d.Refuse {
		if d.Target, err = pg.Deparse(&pg.ParseResult{Version: tree.Version, Stmts: []*pg.RawStmt{{Stmt: target}}}); err != nil {
			return nil, sqlerr.New(sqlerr.InternalError, "cannot write the statement for the workflow's targets: %v", err)
		}
	}
	return d, nil
}

func (d *DDL) addTable(rv *pg.RangeVar) {
	if rv == nil {
		return
	}
	schema := rv.Schemaname
	if schema == "" {
		schema = "public"
	}
	d.Tables = append(d.Tables, topology.QualifiedName{Schema: schema, Name: rv.Relname})
	shown := rv.Relname
	if rv.Schemaname != "" {
		shown = rv.Schemaname + "." + shown
	}
	d.display = append(d.display, shown)
}

// addNames adds a table named by a list of strings (DROP TABLE's).
func (d *DDL) addNames(n *pg.Node) {
	l, ok := n.GetNode().(*pg.Node_List)
	if !ok {
		return
	}
	rv := &pg.RangeVar{}
	for _, item := range l.List.Items {
		if s, ok := item.Node.(*pg.Node_String_); ok {
			rv.Schemaname, rv.Relname = rv.Relname, s.String_.Sval
		}
	}
	d.addTable(rv)
}

// alterCmd classifies one command of ALTER TABLE (and sets IF [NOT]
// EXISTS on it for the targets). The first command the stream cannot
// follow names the statement.
func (d *DDL) alterCmd(c *pg.AlterTableCmd) {
	what, refuse, narrows := "", false, false
	switch c.Subtype {
	case pg.AlterTableType_AT_AddColumn:
		what = "ALTER TABLE ... ADD COLUMN"
		if why := addColumnRefused(c.Def.GetColumnDef()); why != "" {
			what, refuse = what+" "+why, true
		}
		// NOT NULL without a default: a merged target's other source may
		// still send rows from before it, without the column.
		narrows = notNullWithoutDefault(c.Def.GetColumnDef())
		c.MissingOk = true
	case pg.AlterTableType_AT_DropColumn:
		what, narrows = "ALTER TABLE ... DROP COLUMN", true
		d.Columns = append(d.Columns, c.Name)
		c.MissingOk = true
	case pg.AlterTableType_AT_ColumnDefault:
		// A default is used by inserts that leave the column out; the
		// stream's inserts name every column.
		what = "ALTER TABLE ... ALTER COLUMN ... SET DEFAULT"
		if c.Def == nil {
			what = "ALTER TABLE ... ALTER COLUMN ... DROP DEFAULT"
		}
	case pg.AlterTableType_AT_DropNotNull:
		what = "ALTER TABLE ... ALTER COLUMN ... DROP NOT NULL"
	case pg.AlterTableType_AT_SetNotNull:
		what, narrows = "ALTER TABLE ... ALTER COLUMN ... SET NOT NULL", true
	case pg.AlterTableType_AT_AddConstraint:
		what, narrows = "ALTER TABLE ... ADD CONSTRAINT ... CHECK", true
		if c.Def.GetConstraint().GetContype() != pg.ConstrType_CONSTR_CHECK {
			what, refuse = "ALTER TABLE ... ADD CONSTRAINT (other than CHECK)", true
		}
	case pg.AlterTableType_AT_DropConstraint:
		what = "ALTER TABLE ... DROP CONSTRAINT"
		c.MissingOk = true
	case pg.AlterTableType_AT_AlterColumnType:
		what, refuse = "ALTER TABLE ... ALTER COLUMN ... TYPE", true
	default:
		what, refuse = "ALTER TABLE ... "+strings.ReplaceAll(strings.TrimPrefix(c.Subtype.String(), "AT_"), "_", " "), true
	}
	d.Narrows = d.Narrows || narrows
	if d.What == "" || refuse && !d.Refuse {
		d.What = what
	}
	d.Refuse = d.Refuse || refuse
}

// addColumnRefused says why the stream cannot follow an added column
// ("" when it can): its existing rows take its default when it is added,
// without a change the stream would carry, so only a constant default
// gives the targets' rows the same value.
func addColumnRefused(cd *pg.ColumnDef) string {
	if cd == nil {
		return "(unreadable)"
	}
	if tn := cd.TypeName; tn != nil && len(tn.Names) > 0 {
		switch stringOf(tn.Names[len(tn.Names)-1]) {
		case "serial", "bigserial", "smallserial", "serial2", "serial4", "serial8":
			return "with a non-constant default (serial)"
		}
	}
	for _, n := range cd.Constraints {
		c := n.GetConstraint()
		switch c.GetContype() {
		case pg.ConstrType_CONSTR_NULL, pg.ConstrType_CONSTR_NOTNULL, pg.ConstrType_CONSTR_CHECK:
		case pg.ConstrType_CONSTR_DEFAULT:
			if !constantExpr(c.RawExpr) {
				return "with a non-constant default"
			}
		default:
			return "with " + strings.ReplaceAll(strings.TrimPrefix(c.GetContype().String(), "CONSTR_"), "_", " ")
		}
	}
	return ""
}

func notNullWithoutDefault(cd *pg.ColumnDef) bool {
	notNull, def := false, false
	for _, n := range cd.GetConstraints() {
		switch n.GetConstraint().GetContype() {
		case pg.ConstrType_CONSTR_NOTNULL:
			notNull = true
		case pg.ConstrType_CONSTR_DEFAULT:
			def = true
		}
	}
	return notNull && !def
}

func constantExpr(n *pg.Node) bool {
	switch x := n.GetNode().(type) {
	case *pg.Node_AConst:
		return true
	case *pg.Node_TypeCast:
		return constantExpr(x.TypeCast.Arg)
	}
	return false
}

func stringOf(n *pg.Node) string {
	if s, ok := n.GetNode().(*pg.Node_String_); ok {
		return s.String_.Sval
	}
	return ""
}

// DDLSchemaSQL says whether main has workflow records at all.
const DDLSchemaSQL = `SELECT to_regclass('shardgate.workflow_tables') IS NOT NULL`

// DDLWorkflowsSQL lists, on main, the workflows not completed or
// cancelled: id, kind, phase, traffic, spec, whether every table is
// copied, and the tables (one per line). Decide reads its rows.
const DDLWorkflowsSQL = `SELECT w.id::text, w.kind, w.phase, w.traffic, w.spec::text, bool_and(t.done)::text,
	string_agg(DISTINCT t.table_name, E'\n')
	FROM shardgate.workflows w JOIN shardgate.workflow_tables t ON t.workflow_id = w.id
	WHERE w.phase NOT IN ('completed', 'cancelled') GROUP BY w.id ORDER BY w.id`

// Decide refuses the statement (55000, naming the workflow) when a
// workflow holds one of its tables and cannot follow it, else returns the
// content of the logical message the statement's transaction must write
// on each cluster it runs on (nil: no workflow needs one). rows are
// DDLWorkflowsSQL's, as text.
func (d *DDL) Decide(rows [][][]byte) ([]byte, error) {
	need := false
	for _, row := range rows {
		if len(row) < 7 {
			return nil, sqlerr.New(sqlerr.InternalError, "workflow list: %d columns", len(row))
		}
		id, kind, phase, traffic := string(row[0]), string(row[1]), string(row[2]), string(row[3])
		copied := string(row[5]) == "true"
		var held []topology.QualifiedName
		for _, s := range strings.Split(string(row[6]), "\n") {
			if q, err := topology.ParseQualifiedName(s); err == nil {
				held = append(held, q)
			}
		}
		shown, tables := d.heldBy(held)
		if shown == "" {
			continue
		}
		in := fmt.Sprintf("%s is in workflow wf-%s (%s, %s)", shown, id, kind, phase)
		if d.Refuse {
			return nil, refused("%s: %s cannot follow the stream; complete or cancel it first", in, d.What)
		}
		if phase == PhaseCreated || phase == PhaseCopying || !copied {
			// Its copy holds the tables under a snapshot: the statement
			// would wait behind it, and every write to the table behind
			// the statement.
			return nil, refused("%s: %s cannot run while the workflow copies its tables; retry once it streams, or cancel it", in, d.What).
				WithDetail("The copy reads the table under a snapshot held up to the workflow's --snapshot-max: the statement would wait for it, and every write to the table would wait behind the statement.")
		}
		if d.Narrows || len(d.Columns) > 0 {
			if err := d.checkPlan(in, row[4], traffic, tables); err != nil {
				return nil, err
			}
		}
		if d.Message && !need {
			need, d.in = true, in
		}
	}
	if !need {
		return nil, nil
	}
	m := ddlMessage{SQL: d.Target}
	for _, q := range d.Tables {
		m.Tables = append(m.Tables, q.String())
	}
	return json.Marshal(m)
}

// heldBy returns the statement's tables among held, and the first as
// written ("" when none is). A statement naming no table (an index
// alone) concerns every workflow.
func (d *DDL) heldBy(held []topology.QualifiedName) (shown string, tables []topology.QualifiedName) {
	if len(d.Tables) == 0 {
		return "the index's table", nil
	}
	for i, q := range d.Tables {
		if slices.Contains(held, q) {
			if shown == "" {
				shown = fmt.Sprintf("table %q", d.display[i])
			}
			tables = append(tables, q)
		}
	}
	return shown, tables
}

// checkPlan refuses what a stream can follow only where one source feeds
// each target, on a target fed by several, and a dropped shard key column.
func (d *DDL) checkPlan(in string, specText []byte, traffic string, tables []topology.QualifiedName) error {
	var spec Spec
	if err := json.Unmarshal(specText, &spec); err != nil {
		return err
	}
	p, err := NewPlan(spec)
	if err != nil {
		return err
	}
	p = p.serving(traffic)
	for _, tp := range p.Tables {
		if len(tables) > 0 && !slices.Contains(tables, tp.Name) {
			continue
		}
		for _, c := range d.Columns {
			if slices.Contains(tp.Route.KeyColumns(), c) || tp.From != nil && slices.Contains(tp.From.KeyColumns(), c) {
				return refused("%s: %s of shard key column %q cannot follow the stream; complete or cancel it first", in, d.What, c)
			}
		}
		if !d.Narrows {
			continue
		}
		for i := range p.Targets {
			if shared(p, tp, i) {
				return refused("%s: %s cannot follow the stream: target cluster %s takes the table's rows from several sources, whose streams reach the statement at different times; complete or cancel it first",
					in, d.What, p.Targets[i].Name)
			}
		}
	}
	return nil
}

// DDLMessageSQL writes a DDL logical message in the current transaction.
func DDLMessageSQL(content []byte) string {
	return "SELECT pg_catalog.pg_logical_emit_message(true, " + keyexpr.Text(ddlPrefix).String() + ", " + keyexpr.Text(string(content)).String() + ")"
}

// DDLKeptKeySQL counts, after the statement ran in its transaction, the
// tables among its own that lost their primary key (a DROP CONSTRAINT,
// a DROP COLUMN ... CASCADE): the stream applies changes by primary key,
// so the proxy refuses the statement then, before it commits.
func (d *DDL) DDLKeptKeySQL() string {
	if len(d.Tables) == 0 || !d.Message {
		return ""
	}
	var names []string
	for _, q := range d.Tables {
		names = append(names, keyexpr.Text(q.String()).String())
	}
	return "SELECT count(*)::text FROM unnest(ARRAY[" + strings.Join(names, ", ") + "]) t(name) WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = pg_catalog.to_regclass(t.name) AND i.indisprimary)"
}

// LostKey refuses a statement that dropped a table's primary key.
func (d *DDL) LostKey() error {
	return refused("%s: %s would take the table's primary key away, and the stream applies changes by primary key; complete or cancel it first", d.in, d.What)
}

// ddl queues a DDL message's statement, in the open source transaction,
// for the targets this source feeds the message's tables to (every
// target for a statement naming an index only). The target runs it
// where the source transaction is in the stream, in the same target
// transaction as the changes around it and the applied LSN.
func (a *applier) ddl(content []byte) error {
	var m ddlMessage
	if err := json.Unmarshal(content, &m); err != nil {
		return fmt.Errorf("DDL message: %w", err)
	}
	var to []int
	for i := range a.targets {
		if len(m.Tables) == 0 {
			to = append(to, i)
		}
	}
	for _, s := range m.Tables {
		q, err := topology.ParseQualifiedName(s)
		tp := a.r.plan.table(q)
		if err != nil || tp == nil || !slices.Contains(tp.Sources, a.source) {
			// Another workflow's table, or one this source does not feed
			// (a reference table is copied and streamed from its first
			// source only, though the statement ran on every cluster).
			continue
		}
		for i := range a.targets {
			if feeds(a.r.plan, tp, a.source, i) && !slices.Contains(to, i) {
				to = append(to, i)
			}
		}
	}
	for _, i := range to {
		a.ops[i] = append(a.ops[i], change{sql: m.SQL})
	}
	if len(to) > 0 {
		a.r.logf("workflow %d: DDL from %s follows on %d target(s): %s", a.r.id, a.source, len(to), m.SQL)
	}
	return nil
}

// columnType is the type of a published column: as the runner read the
// table, or, for a column added since (or dropped since, in a change
// streamed from before the drop), as the source names the type the
// relation message gives.
func (a *applier) columnType(ti *tableInfo, c *pglogrepl.RelationMessageColumn) (string, error) {
	if col, ok := ti.column(c.Name); ok && col.OID == c.DataType {
		return col.Type, nil
	}
	if a.src == nil {
		return "", sqlerr.New(sqlerr.InternalError, "column %s of type %d is unknown", c.Name, c.DataType)
	}
	var t string
	if err := a.src.QueryRow(a.ctx, "SELECT pg_catalog.format_type($1, $2)", c.DataType, c.TypeModifier).Scan(&t); err != nil {
		return "", fmt.Errorf("source %s: type of column %s: %w", a.source, c.Name, err)
	}
	return t, nil
}

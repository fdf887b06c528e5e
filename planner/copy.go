package planner

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// COPY planning. COPY of main-group (and other unsharded) tables, and of
// queries on them, is an ordinary Route: the statement and its data go to
// the one cluster as they are. COPY of what a sharded group holds becomes:
//
//   - CopyIn for COPY table FROM STDIN into a member table (every row to
//     the shard of its key) or a reference table (every row to every copy).
//     The proxy starts the same COPY on every cluster of the group, reads
//     each row of the client's stream just far enough to find its key, and
//     forwards it.
//   - CopyOut for COPY table|(query) TO STDOUT across several clusters:
//     each runs the statement and the proxy concatenates their data into
//     one COPY answer.
//   - A plain Route when the rows come from one cluster (a reference table,
//     a query pinned to one shard).
//
// COPY to or from a file or program on a backend server is refused for
// sharded groups: each cluster would read or write its own file.

// CopyFormat is the data format of a COPY.
type CopyFormat uint8

// COPY formats.
const (
	CopyText CopyFormat = iota
	CopyCSV
	CopyBinary
)

var copyFormatNames = [...]string{"text", "csv", "binary"}

func (f CopyFormat) String() string {
	if int(f) < len(copyFormatNames) {
		return copyFormatNames[f]
	}
	return "format(?)"
}

// CopyOptions are a COPY statement's options, with the format's defaults
// filled in. Values are as written: the backends validate them (every
// cluster receives the statement unchanged), the proxy only needs them to
// read rows.
type CopyOptions struct {
	Format    CopyFormat
	Delimiter string // text: tab, csv: ","
	Null      string // text: \N, csv: empty
	// Default is the DEFAULT marker (Postgres 16+); HasDefault says one was
	// given.
	Default    string
	HasDefault bool
	// Header: the first line is a header (HEADER or HEADER MATCH).
	Header      bool
	HeaderMatch bool
	Quote       string // csv only: `"`
	Escape      string // csv only: the quote
	// ForceNotNull and ForceNull list columns (csv, COPY FROM); the *All
	// forms are FORCE_NOT_NULL * and FORCE_NULL *.
	ForceNotNull    []string
	ForceNotNullAll bool
	ForceNull       []string
	ForceNullAll    bool
	Encoding        string // "" = the session's client_encoding
	Freeze          bool
	OnError         string // Postgres 17+: "stop" (default) or "ignore"
}

// CopyInfo describes any COPY statement (Plan.Copy).
type CopyInfo struct {
	// From is set for COPY ... FROM, clear for COPY ... TO.
	From bool
	// Stdio is set for FROM STDIN / TO STDOUT, clear for a file or a
	// program on the server.
	Stdio bool
	// Writes is set when the statement changes data: COPY FROM, or COPY
	// (INSERT|UPDATE|DELETE ... RETURNING) TO.
	Writes bool
	// Columns is the column list as the parser gives it (unquoted names
	// lower-cased); nil when the statement lists none.
	Columns []string
	Options CopyOptions
}

// HasForceNotNull reports whether FORCE_NOT_NULL applies to col.
func (o *CopyOptions) HasForceNotNull(col string) bool {
	return o.ForceNotNullAll || containsString(o.ForceNotNull, col)
}

// HasForceNull reports whether FORCE_NULL applies to col.
func (o *CopyOptions) HasForceNull(col string) bool {
	return o.ForceNullAll || containsString(o.ForceNull, col)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// describe renders the options that matter for reading rows, for EXPLAIN.
func (o *CopyOptions) describe() string {
	parts := []string{"format=" + o.Format.String()}
	if o.Header {
		if o.HeaderMatch {
			parts = append(parts, "header=match")
		} else {
			parts = append(parts, "header")
		}
	}
	if o.Format != CopyBinary {
		parts = append(parts, "delimiter="+strconv.Quote(o.Delimiter), "null="+strconv.Quote(o.Null))
	}
	if o.Format == CopyCSV {
		parts = append(parts, "quote="+strconv.Quote(o.Quote), "escape="+strconv.Quote(o.Escape))
		if o.ForceNotNullAll {
			parts = append(parts, "force_not_null=*")
		} else if len(o.ForceNotNull) > 0 {
			parts = append(parts, "force_not_null=("+strings.Join(o.ForceNotNull, ", ")+")")
		}
		if o.ForceNullAll {
			parts = append(parts, "force_null=*")
		} else if len(o.ForceNull) > 0 {
			parts = append(parts, "force_null=("+strings.Join(o.ForceNull, ", ")+")")
		}
	}
	if o.HasDefault {
		parts = append(parts, "default="+strconv.Quote(o.Default))
	}
	if o.Encoding != "" {
		parts = append(parts, "encoding="+strconv.Quote(o.Encoding))
	}
	if o.Freeze {
		parts = append(parts, "freeze")
	}
	return strings.Join(parts, " ")
}

// copyOptions reads the option list of a CopyStmt (old and new syntax
// parse to the same DefElems). Unknown options are left to the backends.
func copyOptions(list []*pg.Node) (CopyOptions, error) {
	var o CopyOptions
	var delim, null, quote, escape *string
	for _, n := range list {
		d, ok := n.Node.(*pg.Node_DefElem)
		if !ok {
			continue
		}
		e := d.DefElem
		switch e.Defname {
		case "format":
			switch f := strings.ToLower(defString(e.Arg)); f {
			case "text":
				o.Format = CopyText
			case "csv":
				o.Format = CopyCSV
			case "binary":
				o.Format = CopyBinary
			default:
				return o, sqlerr.New(sqlerr.InvalidParameterValue, "COPY format \"%s\" not recognized", f)
			}
		case "delimiter":
			s := defString(e.Arg)
			delim = &s
		case "null":
			s := defString(e.Arg)
			null = &s
		case "default":
			o.Default, o.HasDefault = defString(e.Arg), true
		case "quote":
			s := defString(e.Arg)
			quote = &s
		case "escape":
			s := defString(e.Arg)
			escape = &s
		case "header":
			if strings.EqualFold(defString(e.Arg), "match") {
				o.Header, o.HeaderMatch = true, true
			} else {
				o.Header = defBool(e.Arg)
			}
		case "freeze":
			o.Freeze = defBool(e.Arg)
		case "encoding":
			o.Encoding = defString(e.Arg)
		case "on_error":
			o.OnError = strings.ToLower(defString(e.Arg))
		case "force_not_null":
			o.ForceNotNull, o.ForceNotNullAll = defColumns(e.Arg)
		case "force_null":
			o.ForceNull, o.ForceNullAll = defColumns(e.Arg)
		}
	}
	switch o.Format {
	case CopyCSV:
		o.Delimiter, o.Null, o.Quote = ",", "", `"`
	case CopyText:
		o.Delimiter, o.Null = "\t", `\N`
	}
	if delim != nil {
		o.Delimiter = *delim
	}
	if null != nil {
		o.Null = *null
	}
	if quote != nil {
		o.Quote = *quote
	}
	o.Escape = o.Quote
	if escape != nil {
		o.Escape = *escape
	}
	return o, nil
}

// defString returns a DefElem argument as text (identifiers, strings,
// numbers and booleans alike), "" for none.
func defString(n *pg.Node) string {
	switch v := n.GetNode().(type) {
	case *pg.Node_String_:
		return v.String_.Sval
	case *pg.Node_Integer:
		return strconv.Itoa(int(v.Integer.Ival))
	case *pg.Node_Float:
		return v.Float.Fval
	case *pg.Node_Boolean:
		if v.Boolean.Boolval {
			return "true"
		}
		return "false"
	case *pg.Node_TypeName:
		// ENCODING, FORMAT and the like written as keywords.
		var parts []string
		for _, p := range v.TypeName.Names {
			parts = append(parts, stringValue(p))
		}
		return strings.Join(parts, ".")
	}
	return ""
}

// defBool reads a boolean option as Postgres's defGetBoolean does; no
// argument means true. Malformed values are the backend's to refuse.
func defBool(n *pg.Node) bool {
	if n == nil {
		return true
	}
	switch strings.ToLower(defString(n)) {
	case "false", "off", "0", "f", "no", "n":
		return false
	}
	return true
}

// defColumns reads a column list or *.
func defColumns(n *pg.Node) (cols []string, all bool) {
	switch v := n.GetNode().(type) {
	case *pg.Node_AStar:
		return nil, true
	case *pg.Node_List:
		for _, item := range v.List.Items {
			cols = append(cols, stringValue(item))
		}
	}
	return cols, false
}

// buildCopy plans COPY.
func (p *Planner) buildCopy(pl *Plan, c *pg.CopyStmt) error {
	pl.Kind = Copy
	opts, err := copyOptions(c.Options)
	if err != nil {
		return err
	}
	info := &CopyInfo{From: c.IsFrom, Stdio: c.Filename == "" && !c.IsProgram, Options: opts}
	for _, a := range c.Attlist {
		info.Columns = append(info.Columns, stringValue(a))
	}
	pl.Copy = info

	a := newAnalysis(p)
	var top *level
	if c.Query != nil {
		top = a.statementLevel(nil, c.Query, true)
	} else {
		top = a.newLevel(nil)
		top.restricting = true
		top.target = a.addInstance(top, c.Relation, false)
		top.write = c.IsFrom
	}
	info.Writes = top.write
	r, err := a.decide(top)
	if err != nil && c.Query != nil && !c.IsFrom && info.Stdio {
		return p.copyIntermediate(pl, c, err)
	}
	if err != nil {
		return err
	}
	if r.Opcode == Unsharded {
		pl.Root = r
		return nil
	}
	name := "query"
	if c.Relation != nil {
		name = top.target.rel.display
	}
	if !info.Stdio {
		where := "from a file"
		switch {
		case c.IsProgram && c.IsFrom:
			where = "from a program"
		case c.IsProgram:
			where = "to a program"
		case !c.IsFrom:
			where = "to a file"
		}
		return sqlerr.New(sqlerr.FeatureNotSupported, "COPY %s %s on the server is not supported for %s (group %s)", name, where, name, r.Group.Name).
			WithDetail("Every cluster of the group would read or write its own file.").
			WithHint("Use COPY ... %s (psql's \\copy) through shardgate.", map[bool]string{true: "FROM STDIN", false: "TO STDOUT"}[c.IsFrom])
	}
	if c.IsFrom {
		if opts.OnError != "" && opts.OnError != "stop" {
			return sqlerr.New(sqlerr.FeatureNotSupported, "COPY %s with ON_ERROR %s is not supported through shardgate", name, opts.OnError).
				WithDetail("Rows the shards skip could not be counted consistently across clusters.")
		}
		return p.copyIn(pl, c, top.target.rel, r, info)
	}
	if r.mode() == ModeSingle && !(c.IsFrom && top.target != nil && top.target.rel.table != nil && len(top.target.rel.table.SecondaryIndexes) > 0) {
		// One copy or one shard: relay as it is (but for a table with
		// secondary indexes, whose rows the proxy reads for their entries).
		pl.Root = r
		return nil
	}
	if r.Opcode == Scatter && r.MergeReason != "" && len(r.Group.Clusters) > 1 {
		return p.copyIntermediate(pl, c, mergeError(r.MergeReason, r.Tables, r.Group, len(r.Group.Clusters)))
	}
	pl.Root = &CopyOut{Route: r, Options: opts}
	return nil
}

// copyIntermediate plans COPY (query) TO STDOUT whose query needs a merge
// or intermediate results (cause: why the shards' data cannot just be
// concatenated) over intermediate results: the query's tables are pulled
// to the coordinator, which runs the COPY of the rewritten query (the
// Intermediate's SQL), in any format, ordered as the query says.
func (p *Planner) copyIntermediate(pl *Plan, c *pg.CopyStmt, cause error) error {
	s := c.Query.GetSelectStmt()
	if s == nil {
		return cause
	}
	read := &Plan{Kind: Select, Returns: true, SQL: pl.SQL, NumParams: pl.NumParams}
	if err := p.buildIntermediate(read, s, cause); err != nil {
		return err
	}
	im := read.Root.(*Intermediate)
	tree, err := parse(im.SQL)
	if err != nil || len(tree.Stmts) != 1 {
		return cause
	}
	cp := proto.Clone(c).(*pg.CopyStmt)
	cp.Query = tree.Stmts[0].Stmt
	if im.SQL, err = deparse(&pg.Node{Node: &pg.Node_CopyStmt{CopyStmt: cp}}); err != nil {
		return cause
	}
	pl.Root = im
	return nil
}

// copyIn plans COPY FROM STDIN into a member or reference table.
func (p *Planner) copyIn(pl *Plan, stmt *pg.CopyStmt, rel *relInfo, r *Route, info *CopyInfo) error {
	rv := stmt.Relation
	relation := keyexpr.QuoteIdentifier(rv.Relname)
	if rv.Schemaname != "" {
		relation = keyexpr.QuoteIdentifier(rv.Schemaname) + "." + relation
	}
	ci := &CopyIn{Group: r.Group, Table: rel.table, Relation: relation, Columns: info.Columns, Options: info.Options, display: rel.display}
	if rel.kind == relSharded && rel.table != nil {
		ci.Indexes = rel.table.SecondaryIndexes
		// A column a sequence fills gets its value from the proxy, which
		// then knows the entries as INSERT does.
		filled := ""
		if seq := rel.table.Sequence; seq != nil {
			filled = seq.Column
		}
		for _, si := range ci.Indexes {
			if si.Expr != nil { // an expression's values: Postgres's to compute
				return sqlerr.New(sqlerr.FeatureNotSupported,
					"COPY into %s is not supported: the proxy would not compute the values of its global secondary index %s on %s", rel.display, si.Name, si.Label()).
					WithHint("Insert the rows with INSERT, whose entries the proxy maintains.")
			}
			for _, col := range si.ValueColumns() {
				if info.Columns != nil && !containsString(info.Columns, col) && col != filled {
					return sqlerr.New(sqlerr.FeatureNotSupported,
						"COPY into %s without column %s is not supported: the proxy would not know the entries of its global secondary index %s", rel.display, col, si.Name).
						WithHint("List %s among the COPY's columns, with its values (\\N for NULL).", col)
				}
			}
		}
	}
	if rel.kind == relSharded {
		ci.KeyColumns = rel.table.KeyColumns()
		if info.Columns != nil {
			if seq := rel.table.Sequence; seq != nil && !containsString(info.Columns, seq.Column) {
				if err := ci.fillFrom(stmt, seq.Column, rel.sequenceFor(seq.Column)); err != nil {
					return err
				}
			}
			for _, k := range ci.KeyColumns {
				if !containsString(info.Columns, k) && (ci.Fill == nil || ci.Fill.Column != k) {
					return missingCopyKey(rel, k)
				}
			}
		}
	}
	pl.Root = ci
	return nil
}

// CopyFill is a column a COPY FROM leaves out that a main-group sequence
// fills, as INSERT fills it: the proxy draws one value per row and adds
// it to the row as the COPY's last column (SQL lists it).
type CopyFill struct {
	Column, Sequence string
	// SQL is the COPY with Column added to its column list.
	SQL string
}

// fillFrom makes ci fill col from seq: the statement, stmt, gets the
// column at the end of its list.
func (ci *CopyIn) fillFrom(stmt *pg.CopyStmt, col, seq string) error {
	c := proto.Clone(stmt).(*pg.CopyStmt)
	c.Attlist = append(c.Attlist, &pg.Node{Node: &pg.Node_String_{String_: &pg.String{Sval: col}}})
	sql, err := deparse(&pg.Node{Node: &pg.Node_CopyStmt{CopyStmt: c}})
	if err != nil {
		return sqlerr.New(sqlerr.InternalError, "cannot print the COPY with column %s: %v", col, err)
	}
	ci.Fill = &CopyFill{Column: col, Sequence: seq, SQL: sql}
	return nil
}

// missingCopyKey refuses COPY into a sharded table whose column list lacks
// a key column, with the SQLSTATE INSERT uses (see missingKey).
func missingCopyKey(rel *relInfo, col string) error {
	return sqlerr.New(sqlerr.NotNullViolation,
		"shard key column %q of table %q is missing in COPY", col, rel.name).
		WithHint("Every row of a sharded table needs its shard key; add %q to the column list.", col)
}

// CopyIn is COPY ... FROM STDIN into a table of a sharded group. For a
// member table every row goes to the shard its key maps to; for a
// reference table every row goes to every cluster. The proxy runs the
// statement, unchanged, on every cluster of the group (in one
// transaction, so a failure anywhere loads nothing anywhere) and splits
// the client's data between them.
type CopyIn struct {
	Group *vschema.Group
	Table *vschema.Table
	// Relation is the table as the statement names it, as SQL (quoted
	// where needed, schema-qualified only if the statement is), so that a
	// backend resolves it the way it resolves the COPY.
	Relation string
	// Columns is the statement's column list, nil for every column in the
	// table's order (which only a backend knows).
	Columns []string
	// KeyColumns are the table columns the shard key is computed from; nil
	// for a reference table.
	KeyColumns []string
	// Indexes are the table's global secondary indexes: the proxy reads
	// each row's indexed values too and writes their entries once the
	// rows are copied (copyroute, gsi.Insert), in the same transaction.
	Indexes []*vschema.SecondaryIndex
	Options CopyOptions
	// Fill: a column left out of Columns that a sequence fills (nil: none).
	Fill *CopyFill

	display string
}

// Name implements Primitive.
func (c *CopyIn) Name() string { return "CopyIn" }

// Inputs implements Primitive.
func (c *CopyIn) Inputs() []Primitive { return nil }

// Reference reports whether the table is a reference table (every row to
// every cluster).
func (c *CopyIn) Reference() bool { return c.KeyColumns == nil }

func (c *CopyIn) mode() RouteMode {
	if c.Reference() {
		return ModeReplicate
	}
	return ModeScatter
}

func (c *CopyIn) targets(*Plan, []Param) ([]Target, error) {
	ts := make([]Target, len(c.Group.Clusters))
	for i, cl := range c.Group.Clusters {
		ts[i] = clusterTarget(c.Group, cl, true)
	}
	return ts, nil
}

func (c *CopyIn) explain(w *explainWriter, pl *Plan, depth int) {
	g := c.Group
	head := "CopyIn group=" + g.Name + " table=" + c.display
	if c.Reference() {
		head += " reference"
	} else {
		head += " index=" + g.Index.String()
		if c.Table.KeyColumn != "" && c.Table.KeyColumn != g.Index.Column {
			head += " key=" + c.Table.KeyColumn
		}
	}
	w.line(depth, "%s %s", head, c.Options.describe())
	if c.Fill != nil {
		w.line(depth+1, "columns: %s, %s (drawn from %s for each row)", strings.Join(c.Columns, ", "), c.Fill.Column, c.Fill.Sequence)
		w.line(depth+1, "shard sql: %s", c.Fill.SQL)
	} else if c.Columns != nil {
		w.line(depth+1, "columns: %s", strings.Join(c.Columns, ", "))
	} else {
		w.line(depth+1, "columns: all, in table order")
	}
	if c.Reference() {
		w.line(depth+1, "rows: every row to every cluster: %s", strings.Join(g.Clusters, ", "))
	} else {
		w.line(depth+1, "rows: each to the shard of its key: %s", describeShards(g.Shards))
	}
	for _, si := range c.Indexes {
		w.line(depth+1, "entries: written to lookup table %s of index %s(%s), in the same transaction", si.Lookup.Name, si.Name, si.Column)
	}
	w.line(depth+1, "sql: %s", oneLine(pl.SQL))
}

// CopyOut is COPY ... TO STDOUT that several clusters answer: each runs
// the statement (Route's targets) and the proxy sends one COPY answer made
// of their data in cluster order, with one header line (csv or text
// HEADER) or one binary file header and trailer, and the summed row count.
type CopyOut struct {
	Route   *Route
	Options CopyOptions
}

// Name implements Primitive.
func (c *CopyOut) Name() string { return "CopyOut" }

// Inputs implements Primitive.
func (c *CopyOut) Inputs() []Primitive { return []Primitive{c.Route} }

func (c *CopyOut) mode() RouteMode { return ModeScatter }

func (c *CopyOut) targets(pl *Plan, params []Param) ([]Target, error) {
	return c.Route.targets(pl, params)
}

func (c *CopyOut) explain(w *explainWriter, pl *Plan, depth int) {
	w.line(depth, "CopyOut %s (data of every cluster concatenated)", c.Options.describe())
	c.Route.explain(w, pl, depth+1)
}

// explainRouteCopy plans EXPLAIN (ROUTE) COPY ...: Postgres's grammar has
// no EXPLAIN of COPY, so the parser refuses the statement, but the route
// of a COPY is worth asking for. ok is false when sql is not of that form
// (the caller reports the original syntax error).
func (p *Planner) explainRouteCopy(sql string) (pl *Plan, err error, ok bool) {
	inner, at := explainedText(sql)
	if at == 0 || !hasRouteOption(sql[:at]) {
		return nil, nil, false
	}
	tree, perr := parse(inner)
	if perr != nil || len(tree.Stmts) != 1 {
		return nil, nil, false
	}
	c, isCopy := tree.Stmts[0].Stmt.Node.(*pg.Node_CopyStmt)
	if !isCopy {
		return nil, nil, false
	}
	in := &Plan{SQL: inner, NumParams: maxParam(tree.Stmts[0].Stmt)}
	if err := p.buildCopy(in, c.CopyStmt); err != nil {
		return nil, err, true
	}
	return &Plan{SQL: sql, Kind: ExplainRoute, Returns: true, Inner: in, NumParams: in.NumParams,
		Root: &ProxyLocal{What: "EXPLAIN (ROUTE)"}}, nil, true
}

// hasRouteOption reports whether the text before an EXPLAINed statement
// holds the ROUTE option in parentheses.
func hasRouteOption(prefix string) bool {
	s, err := scanSQL(prefix)
	if err != nil {
		return false
	}
	depth := 0
	for i, t := range s.toks {
		depth += bracketDelta(t)
		if depth > 0 && t.Token == pg.Token_IDENT && isRouteIdent(prefix[s.start(i):s.end(i)]) {
			return true
		}
	}
	return false
}

// isRouteIdent reports whether an identifier token names "route": route
// in any case unquoted, or "route" quoted.
func isRouteIdent(tok string) bool {
	return equalFoldASCII(tok, "route") || tok == `"route"`
}

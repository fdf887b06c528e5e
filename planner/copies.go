package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
)

// A write to a reference table runs the same statement on every copy
// (Route AllClusters). Each cluster evaluates the statement's functions
// itself, so a function that is not immutable — random(), now(),
// clock_timestamp(), gen_random_uuid(), nextval of a cluster's own
// sequence — stores a different value in each copy, and the copies stop
// agreeing for good. copiesPass refuses such a write at plan time (0A000)
// unless the value is one the proxy computes once for every copy (the
// nextval('seq') calls of an INSERT's VALUES, SequenceFill). What it lets
// through calls only functions of a small list known to give the same
// answer on every cluster (sameEverywhere). Column defaults are the
// backend's: the planner cannot see them, so a reference table's defaults
// are checked where the proxy sees them, in the CREATE TABLE and ALTER
// TABLE that set them.

// sameEverywhere lists the built-in functions (pg_catalog, unqualified or
// qualified) whose result depends only on their arguments and the
// session's settings, which the proxy makes the same on every cluster.
var sameEverywhere = map[string]bool{}

func init() {
	for _, group := range []string{
		// strings
		"lower upper initcap length char_length character_length octet_length bit_length",
		"substr substring left right lpad rpad ltrim rtrim btrim trim replace translate",
		"concat concat_ws format repeat reverse split_part strpos position overlay",
		"md5 sha224 sha256 sha384 sha512 encode decode quote_ident quote_literal quote_nullable",
		"ascii chr starts_with to_hex regexp_replace regexp_match regexp_split_to_array",
		"regexp_like regexp_count regexp_instr regexp_substr normalize unistr string_to_array array_to_string",
		// numbers
		"abs round trunc ceil ceiling floor sign mod power pow sqrt cbrt exp ln log log10 div",
		"width_bucket gcd lcm pi degrees radians sin cos tan asin acos atan atan2 factorial",
		"num_nulls num_nonnulls",
		// casts written as calls
		"int2 int4 int8 smallint integer bigint numeric float4 float8 real bool text varchar",
		"bpchar char name date time timestamp timestamptz interval uuid json jsonb bytea",
		// dates and times of given values
		"make_date make_time make_timestamp make_timestamptz make_interval date_part extract",
		"date_trunc date_bin to_char to_date to_timestamp to_number justify_days justify_hours",
		"justify_interval isfinite timezone overlaps",
		// json and arrays
		"to_json to_jsonb json_build_object jsonb_build_object json_build_array jsonb_build_array",
		"json_object jsonb_object jsonb_set jsonb_set_lax jsonb_insert jsonb_strip_nulls json_strip_nulls",
		"json_typeof jsonb_typeof json_extract_path jsonb_extract_path json_extract_path_text",
		"jsonb_extract_path_text json_array_length jsonb_array_length jsonb_pretty row_to_json array_to_json",
		"array_append array_prepend array_cat array_length array_position array_positions array_remove",
		"array_replace cardinality array_upper array_lower array_ndims array_dims",
		// range constructors
		"int4range int8range numrange tsrange tstzrange daterange",
		// aggregates whose result does not depend on the order of rows
		"count min max bool_and bool_or every",
	} {
		for _, f := range strings.Fields(group) {
			sameEverywhere[f] = true
		}
	}
}

// copiesPass refuses a statement that writes every copy of a reference
// table and computes a value each copy could compute differently.
func (p *Planner) copiesPass(pl *Plan, stmt *pg.Node) error {
	r, filled := replicatedRoute(pl.Root)
	if r == nil || len(r.Group.Clusters) < 2 {
		return nil
	}
	if _, ok := stmt.GetNode().(*pg.Node_ExplainStmt); ok {
		return nil // EXPLAIN plans (and checks) its statement separately
	}
	table, scopes, defs := p.referenceWrite(pl, stmt)
	if table == nil {
		return nil
	}
	for _, scope := range scopes {
		if what := differingValue(scope, filled); what != "" {
			return copiesDiffer(table, what, defs)
		}
	}
	r.sameParams = !defs
	return nil
}

// replicatedRoute returns the Route of a plan that runs the same statement
// on every cluster of a group, with the nextval calls the proxy fills
// (by their offsets).
func replicatedRoute(root Primitive) (*Route, map[int]bool) {
	switch x := root.(type) {
	case *Route:
		if x.Opcode == AllClusters {
			return x, nil
		}
	case *SequenceFill:
		if x.Route.Opcode == AllClusters {
			filled := map[int]bool{}
			for _, f := range x.seg.fills {
				filled[f.start] = true
			}
			return x.Route, filled
		}
	}
	return nil, nil
}

// referenceWrite finds the reference table a statement writes and the
// parts of the statement that compute what it stores: the whole statement
// for DML; the query of CREATE TABLE AS and SELECT INTO; the column
// definitions of CREATE and ALTER TABLE (defs is set). nil when it writes
// no reference table.
func (p *Planner) referenceWrite(pl *Plan, stmt *pg.Node) (table *relInfo, scopes []*pg.Node, defs bool) {
	reference := func(rv *pg.RangeVar) *relInfo {
		if rv == nil {
			return nil
		}
		if info := p.lookup(rv.Schemaname, rv.Relname); info.kind == relReference {
			return info
		}
		return nil
	}
	switch x := stmt.Node.(type) {
	case *pg.Node_CreateTableAsStmt:
		if x.CreateTableAsStmt.Into == nil {
			return nil, nil, false
		}
		return reference(x.CreateTableAsStmt.Into.Rel), []*pg.Node{x.CreateTableAsStmt.Query}, false
	case *pg.Node_SelectStmt:
		if into := x.SelectStmt.IntoClause; into != nil {
			return reference(into.Rel), []*pg.Node{stmt}, false
		}
	}
	if pl.Kind != DDL {
		walk(stmt, func(n *pg.Node) bool {
			switch x := n.Node.(type) {
			case *pg.Node_InsertStmt:
				table = reference(x.InsertStmt.Relation)
			case *pg.Node_UpdateStmt:
				table = reference(x.UpdateStmt.Relation)
			case *pg.Node_DeleteStmt:
				table = reference(x.DeleteStmt.Relation)
			case *pg.Node_MergeStmt:
				table = reference(x.MergeStmt.Relation)
			}
			return table == nil
		})
		return table, []*pg.Node{stmt}, false
	}
	for _, r := range p.utilityRelations(stmt) {
		if info := p.lookup(r.schema, r.name); info.kind == relReference {
			return info, columnDefaults(stmt), true
		}
	}
	return nil, nil, false
}

// columnDefaults collects what CREATE TABLE and ALTER TABLE make a
// reference table's columns compute: DEFAULT expressions, ALTER COLUMN
// TYPE's USING, and serial or identity columns (returned as the
// ColumnDef or Constraint itself, which differingValue names).
func columnDefaults(stmt *pg.Node) []*pg.Node {
	var out []*pg.Node
	walk(stmt, func(n *pg.Node) bool {
		switch x := n.Node.(type) {
		case *pg.Node_ColumnDef:
			if t := x.ColumnDef.TypeName; t != nil && len(t.Names) > 0 &&
				isOneOf(stringValue(t.Names[len(t.Names)-1]), []string{"serial", "serial2", "serial4", "serial8", "smallserial", "bigserial"}) {
				out = append(out, n)
			}
			if x.ColumnDef.RawDefault != nil {
				out = append(out, x.ColumnDef.RawDefault)
			}
		case *pg.Node_Constraint:
			switch x.Constraint.Contype {
			case pg.ConstrType_CONSTR_DEFAULT:
				out = append(out, x.Constraint.RawExpr)
			case pg.ConstrType_CONSTR_IDENTITY:
				out = append(out, n)
			}
		case *pg.Node_AlterTableCmd:
			if c := x.AlterTableCmd; c.Subtype == pg.AlterTableType_AT_ColumnDefault && c.Def != nil {
				out = append(out, c.Def)
			} else if c.Subtype == pg.AlterTableType_AT_AddIdentity {
				out = append(out, n)
			}
		}
		return true
	})
	return out
}

// differingValue names the first thing in n whose value a cluster
// computes for itself ("random()", "CURRENT_TIMESTAMP", "'now'"), or "".
// filled are the offsets of nextval calls the proxy replaces by values.
func differingValue(n *pg.Node, filled map[int]bool) string {
	what := ""
	walk(n, func(c *pg.Node) bool {
		if what != "" {
			return false
		}
		switch x := c.Node.(type) {
		case *pg.Node_FuncCall:
			f := x.FuncCall
			if filled[int(f.Location)] {
				return false
			}
			name, catalog := catalogFunction(f.Funcname)
			if !catalog || !sameEverywhere[name] || f.Over != nil {
				what = functionDisplay(f.Funcname) + "()"
			}
		case *pg.Node_SqlvalueFunction:
			switch x.SqlvalueFunction.Op {
			case pg.SQLValueFunctionOp_SVFOP_CURRENT_ROLE, pg.SQLValueFunctionOp_SVFOP_CURRENT_USER,
				pg.SQLValueFunctionOp_SVFOP_USER, pg.SQLValueFunctionOp_SVFOP_SESSION_USER,
				pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
			default:
				what = sqlValueFunctionName(x.SqlvalueFunction.Op)
			}
		case *pg.Node_TypeCast:
			// 'today'::text is text; 'today'::date is the date of the
			// cluster's clock.
			if t := x.TypeCast.TypeName; t != nil && len(t.Names) > 0 &&
				isOneOf(stringValue(t.Names[len(t.Names)-1]), []string{"text", "varchar", "bpchar", "name", "char"}) {
				if _, isConst := x.TypeCast.Arg.GetNode().(*pg.Node_AConst); isConst {
					return false
				}
			}
		case *pg.Node_AConst:
			if s, ok := x.AConst.Val.(*pg.A_Const_Sval); ok && clockWord(s.Sval.Sval) {
				what = "'" + s.Sval.Sval + "'"
			}
		case *pg.Node_RangeTableSample:
			what = "TABLESAMPLE"
		case *pg.Node_ColumnDef:
			what = "a serial column"
		case *pg.Node_Constraint:
			what = "an identity column"
		case *pg.Node_AlterTableCmd:
			what = "an identity column"
		}
		return what == ""
	})
	return what
}

// clockWord reports the date/time input strings that read the clock.
func clockWord(s string) bool {
	return isOneOf(strings.TrimSpace(s), []string{"now", "today", "tomorrow", "yesterday"})
}

func functionDisplay(names []*pg.Node) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = stringValue(n)
	}
	return strings.Join(parts, ".")
}

func sqlValueFunctionName(op pg.SQLValueFunctionOp) string {
	name := strings.TrimPrefix(op.String(), "SVFOP_")
	return strings.TrimSuffix(name, "_N")
}

// copiesDiffer is the refusal of copiesPass.
func copiesDiffer(table *relInfo, what string, defs bool) error {
	g := table.group
	if defs {
		return sqlerr.New(sqlerr.FeatureNotSupported,
			"%s in the column definitions of reference table %s is not supported", what, table.display).
			WithDetail("%s is copied to every cluster of group %s (%s); each would compute its own default, and the copies would differ.",
				table.display, g.Name, strings.Join(g.Clusters, ", ")).
			WithHint("Give the column a constant default, or none, and send its value in every INSERT (nextval('seq') in an INSERT's VALUES is drawn once by the proxy for every copy).")
	}
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"writing reference table %s with %s is not supported", table.display, what).
		WithDetail("%s is copied to every cluster of group %s (%s); each cluster would evaluate %s itself, and the copies would differ.",
			table.display, g.Name, strings.Join(g.Clusters, ", "), what).
		WithHint("Compute the value in the client and send it as a literal or a parameter.")
}

// clockLiterals reports a plan of normalized text that writes every copy
// of a reference table with a lifted literal that is a clock word: the
// statement is planned as written instead, where the literal's context
// (a cast to text) decides.
func clockLiterals(pl *Plan, params []Param) bool {
	r, _ := replicatedRoute(pl.Root)
	if r == nil || !r.sameParams {
		return false
	}
	for _, p := range params {
		if !p.Null && clockWord(string(p.Value)) {
			return true
		}
	}
	return false
}

// sameParamsCheck refuses, for a write to every copy, a parameter whose
// text a date/time column reads as the clock of the cluster ('now',
// 'today', ...): each copy would store its own time. Parameters declared
// text pass; undeclared ones are checked.
func sameParamsCheck(r *Route, params []Param) error {
	for i, p := range params {
		if p.Null || p.Binary || !clockWord(string(p.Value)) {
			continue
		}
		switch p.OID {
		case 0, 1082, 1083, 1114, 1184, 1266, 705: // unknown, date, time, timestamp, timestamptz, timetz, unknown
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"writing a reference table of group %s with the value '%s' (parameter $%d) is not supported", r.Group.Name, p.Value, i+1).
				WithDetail("A date or time column reads '%s' as the clock of each cluster, and the copies would differ.", p.Value).
				WithHint("Send the date or time itself, computed in the client; for text, declare the parameter as text.")
		}
	}
	return nil
}

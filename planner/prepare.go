package planner

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
)

// PreparedInfo describes SQL-level PREPARE (Kind Prepare) and EXECUTE
// (Kind Execute). The proxy keeps SQL-level prepared statements as it
// keeps protocol-level ones (Parse): it plans Statement (Plan.Inner is
// that plan), prepares it on each backend connection where it runs, under
// a name of its own, and runs EXECUTE as a Bind of Args and an Execute.
// Both share one namespace, as in Postgres: DEALLOCATE drops either.
type PreparedInfo struct {
	// Name is the prepared statement's name as Postgres folds it.
	Name string
	// ParamTypes are PREPARE's parameter types as SQL text ("bigint",
	// "numeric(10,2)", "text[]", "public.mood"); nil when none are given.
	ParamTypes []string
	// ParamOIDs are the type OIDs of ParamTypes, for Parse: known for the
	// built-in types, 0 for others, which the proxy looks up on main
	// (SELECT 'public.mood'::regtype::oid).
	ParamOIDs []uint32
	// Statement is the statement PREPARE prepares, as the client wrote
	// it (without "PREPARE name (types) AS").
	Statement string
	// Args are EXECUTE's arguments as text-format parameter values, in
	// order. Only constants are accepted (numbers, strings, booleans,
	// NULL). Param.OID is the constant's own type: int4, int8 or numeric
	// for numbers, bool for TRUE/FALSE, 0 for a quoted string (whose type
	// is the parameter's). Postgres converts an argument to its
	// parameter's type with an assignment cast; CoerceArgs gives the text
	// that the parameter type's input function reads as the same value.
	Args []Param
}

// buildPrepare plans PREPARE: the statement is planned now (as Parse
// would), so that a statement shardgate refuses fails at PREPARE, as a
// statement Postgres rejects does.
func (p *Planner) buildPrepare(pl *Plan, ps *pg.PrepareStmt) error {
	pl.Kind, pl.NumParams = Prepare, 0
	info := &PreparedInfo{Name: ps.Name}
	for _, t := range ps.Argtypes {
		tn, ok := t.Node.(*pg.Node_TypeName)
		if !ok {
			return sqlerr.New(sqlerr.InternalError, "PREPARE parameter type of unexpected form %T", t.Node)
		}
		info.ParamTypes = append(info.ParamTypes, typeNameSQL(tn.TypeName))
		info.ParamOIDs = append(info.ParamOIDs, builtinTypeOID(tn.TypeName))
	}
	text, ok := preparedText(pl.SQL)
	if !ok {
		return sqlerr.New(sqlerr.InternalError, "cannot find the statement of PREPARE %s", strconv.Quote(ps.Name))
	}
	info.Statement = text
	inner, err := p.Plan(text)
	if err != nil {
		return err
	}
	if im, ok := inner.Root.(*Intermediate); ok {
		return sqlerr.New(sqlerr.FeatureNotSupported, "PREPARE of a read over intermediate results is not supported (%s)", im.Cause).
			WithHint("Prepare it through the extended query protocol (Parse), or send it as a query.")
	}
	pl.Inner = inner
	pl.Prepared = info
	pl.Root = &ProxyLocal{What: "PREPARE " + strconv.Quote(ps.Name)}
	return nil
}

// buildExecute plans EXECUTE: the arguments become parameter values.
func buildExecute(pl *Plan, e *pg.ExecuteStmt) error {
	pl.Kind = Execute
	info := &PreparedInfo{Name: e.Name}
	for i, arg := range e.Params {
		v, ok := executeArg(arg)
		if !ok {
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"argument %d of EXECUTE %s is not a constant; shardgate binds only constants", i+1, strconv.Quote(e.Name)).
				WithHint("Write the value as a literal (the parameter's type converts it), or use the extended query protocol.")
		}
		info.Args = append(info.Args, v)
	}
	pl.Prepared = info
	pl.Root = &ProxyLocal{What: "EXECUTE " + strconv.Quote(e.Name)}
	return nil
}

// executeArg turns one constant argument of EXECUTE into a parameter
// value. The grammar folds a sign into numeric constants.
func executeArg(n *pg.Node) (Param, bool) {
	c, ok := n.GetNode().(*pg.Node_AConst)
	if !ok {
		return Param{}, false
	}
	if c.AConst.Isnull {
		return Param{Null: true}, true
	}
	switch v := c.AConst.Val.(type) {
	case *pg.A_Const_Ival:
		return Param{Value: []byte(strconv.Itoa(int(v.Ival.Ival))), OID: oidInt4}, true
	case *pg.A_Const_Fval:
		return Param{Value: []byte(v.Fval.Fval), OID: numberOID(v.Fval.Fval)}, true
	case *pg.A_Const_Sval:
		return Param{Value: []byte(v.Sval.Sval)}, true
	case *pg.A_Const_Boolval:
		return Param{Value: []byte(strconv.FormatBool(v.Boolval.Boolval)), OID: oidBool}, true
	}
	return Param{}, false // bit strings
}

// preparedText returns the statement of "PREPARE name [(types)] AS
// statement", without a trailing semicolon. The tree records no location
// for the statement under PREPARE, so it is found at the tokens.
func preparedText(sql string) (string, bool) {
	s, err := scanSQL(sql)
	if err != nil {
		return "", false
	}
	i := s.next(0)
	if !s.is(i, pg.Token_PREPARE) {
		return "", false
	}
	i = s.next(i + 1) // the name: an identifier or a keyword
	if i >= len(s.toks) || bracketDelta(s.toks[i]) != 0 {
		return "", false
	}
	i = s.next(i + 1)
	if s.is(i, pg.Token_ASCII_40) {
		j := s.closing(i)
		if j < 0 {
			return "", false
		}
		i = s.next(j + 1)
	}
	if !s.is(i, pg.Token_AS) {
		return "", false
	}
	start := s.next(i + 1)
	last := -1 // the statement's last token
	for j := start; j < len(s.toks); j = s.next(j + 1) {
		if !s.is(j, pg.Token_ASCII_59) {
			last = j
		}
	}
	if last < 0 {
		return "", false
	}
	return sql[s.start(start):s.end(last)], true
}

// typeNameSQL prints a type name as SQL ("bigint", "numeric(10,2)",
// "text[]").
func typeNameSQL(t *pg.TypeName) string {
	cast := &pg.Node{Node: &pg.Node_TypeCast{TypeCast: &pg.TypeCast{
		Arg:      &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Isnull: true}}},
		TypeName: t,
	}}}
	out, err := deparse(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{
		TargetList: []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: cast}}}},
	}}})
	if err != nil {
		return strings.Join(typeNames(t), ".")
	}
	return strings.TrimPrefix(out, "SELECT NULL::")
}

func typeNames(t *pg.TypeName) []string {
	names := make([]string, len(t.Names))
	for i, n := range t.Names {
		names[i] = stringValue(n)
	}
	return names
}

// builtinTypeOIDs maps the built-in types a parameter commonly has to
// their OIDs (src/include/catalog/pg_type.dat): element type, then array.
var builtinTypeOIDs = map[string][2]uint32{
	"bool": {16, 1000}, "bytea": {17, 1001}, "name": {19, 1003}, "int8": {20, 1016},
	"int2": {21, 1005}, "int4": {23, 1007}, "text": {25, 1009}, "oid": {26, 1028},
	"json": {114, 199}, "xml": {142, 143}, "float4": {700, 1021}, "float8": {701, 1022},
	"money": {790, 791}, "inet": {869, 1041}, "cidr": {650, 651}, "macaddr": {829, 1040},
	"bpchar": {1042, 1014}, "varchar": {1043, 1015}, "date": {1082, 1182}, "time": {1083, 1183},
	"timestamp": {1114, 1115}, "timestamptz": {1184, 1185}, "interval": {1186, 1187},
	"timetz": {1266, 1270}, "bit": {1560, 1561}, "varbit": {1562, 1563}, "numeric": {1700, 1231},
	"uuid": {2950, 2951}, "jsonb": {3802, 3807},
}

// builtinTypeOID returns the OID of a built-in type named without a
// schema or in pg_catalog (the grammar writes bigint as pg_catalog.int8),
// and 0 for any other type.
func builtinTypeOID(t *pg.TypeName) uint32 {
	names := typeNames(t)
	if len(names) == 2 && names[0] == "pg_catalog" {
		names = names[1:]
	}
	if len(names) != 1 || t.Setof || t.PctType || len(t.ArrayBounds) > 1 {
		return 0
	}
	oids, ok := builtinTypeOIDs[names[0]]
	if !ok {
		return 0
	}
	if len(t.ArrayBounds) == 1 {
		return oids[1]
	}
	return oids[0]
}

// Bind returns EXECUTE's arguments as the text-format values to bind to
// the prepared statement's parameters, whose type OIDs are oids (from
// PREPARE, or the backend's ParameterDescription), with each Param.OID
// set to its parameter's type. Postgres converts an argument to its
// parameter's type with an assignment cast, which for numbers does not
// always read the constant's text as the type's input function would:
// 7.5 for a bigint parameter is 8 and 1e3 is 1000, so the text becomes
// the converted value's. Quoted constants, NULL, and parameters of types
// the planner does not know pass unchanged. Errors are Postgres's: 42601
// for a wrong number of arguments, 22003 for a value out of the
// parameter type's range, 42804 for a number given for a boolean (or the
// reverse).
func (pi *PreparedInfo) Bind(oids []uint32) ([]Param, error) {
	if len(pi.Args) != len(oids) {
		return nil, sqlerr.New(sqlerr.SyntaxError, "wrong number of parameters for prepared statement %s", strconv.Quote(pi.Name)).
			WithDetail("Expected %d parameters but got %d.", len(oids), len(pi.Args))
	}
	out := make([]Param, len(pi.Args))
	for i, a := range pi.Args {
		out[i] = Param{Value: a.Value, Null: a.Null, OID: oids[i]}
		if a.Null || a.OID == 0 {
			continue
		}
		from, to := typeOfOID(a.OID), typeOfOID(oids[i])
		if (a.OID == oidBool) != (oids[i] == oidBool) && (from.isNumber() || to.isNumber()) {
			fromName, toName := from.String(), to.String()
			if a.OID == oidBool {
				fromName = "boolean"
			} else {
				toName = "boolean"
			}
			return nil, sqlerr.New("42804", "parameter $%d of type %s cannot be coerced to the expected type %s", i+1, fromName, toName).
				WithHint("You will need to rewrite or cast the expression.")
		}
		if !from.isNumber() || to == typeUnknown || to == typeUUID {
			continue
		}
		v, err := textValue(typeUnknown, string(a.Value)).cast(from)
		if err == nil {
			v, err = v.cast(to)
		}
		if err != nil {
			return nil, err
		}
		if v.typ == typeText {
			out[i].Value = []byte(v.s)
		} else {
			out[i].Value = []byte(v.String())
		}
	}
	return out, nil
}

package keyexpr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	pgparser "github.com/pganalyze/pg_query_go/v6/parser"
)

// Supported lists what an index expression may contain; error messages
// quote it.
const Supported = "lower, upper, left, right, substr, substring, btrim, trim, casts, ||"

// UnsupportedError reports a construct that index expressions do not allow.
type UnsupportedError struct {
	// Kind says what Func names: "function", "operator", "cast to type",
	// "literal" or "expression".
	Kind string
	// Func is the offending function, operator, type or construct, e.g.
	// "md5", "+", "numeric", "subquery".
	Func string
	// Offset is the byte offset of the construct in the expression text.
	Offset int
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("unsupported %s %q in index expression (supported: %s)", e.Kind, e.Func, Supported)
}

// SyntaxError reports an expression that does not parse, or that calls a
// supported function with the wrong number of arguments.
type SyntaxError struct {
	Message string
	Offset  int // byte offset in the expression text
}

func (e *SyntaxError) Error() string { return e.Message }

// Expr is a parsed index expression. It is immutable and safe for
// concurrent use.
type Expr struct {
	root    node
	columns []string
	text    string
}

// selectPrefix turns an expression into a statement the parser accepts;
// parser locations are shifted back by its length.
const selectPrefix = "SELECT "

// Parse parses src as a Postgres scalar expression and checks that it uses
// only supported constructs. Errors are *SyntaxError or *UnsupportedError,
// both with a byte offset into src, or a *sqlerr.Error with SQLSTATE 54001 for an
// expression too long or too deeply nested for the parser.
func Parse(src string) (*Expr, error) {
	if err := checkLength(src); err != nil {
		return nil, err
	}
	tree, err := pg_query.Parse(selectPrefix + src)
	if err != nil {
		if de := recursionLimit(err); de != nil {
			return nil, de
		}
		off := 0
		var pe *pgparser.Error
		if errors.As(err, &pe) && pe.Cursorpos > 0 {
			off = runeToByteOffset(selectPrefix+src, pe.Cursorpos-1) - len(selectPrefix)
		}
		return nil, &SyntaxError{Message: "invalid index expression: " + err.Error(), Offset: clampOffset(off, src)}
	}
	val, err := singleExpression(tree, src)
	if err != nil {
		return nil, err
	}
	p := parser{src: src}
	root, err := p.translate(val)
	if err != nil {
		return nil, err
	}
	e := &Expr{root: root}
	seen := map[string]bool{}
	root.columns(func(c string) {
		if !seen[c] {
			seen[c] = true
			e.columns = append(e.columns, c)
		}
	})
	var b printer
	root.print(&b, false)
	e.text = b.String()
	return e, nil
}

// MustParse is Parse for expressions known to be valid, such as constants
// in tests; it panics on error.
func MustParse(src string) *Expr {
	e, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return e
}

// Columns returns the distinct column names the expression reads, in order
// of first appearance.
func (e *Expr) Columns() []string { return append([]string(nil), e.columns...) }

// String returns the expression in canonical form: substring and trim are
// written substr and btrim, casts as ::type with Postgres's type names,
// identifiers quoted only where needed. Equal expressions print equally,
// and the text parses back to the same expression.
func (e *Expr) String() string { return e.text }

// Qualified returns the expression's text with every column reference
// qualified by qualifier (an SQL name, quoted as needed, without the dot):
// the same expression, for a statement that reads several tables.
func (e *Expr) Qualified(qualifier string) string {
	b := printer{qualifier: qualifier + "."}
	e.root.print(&b, false)
	return b.String()
}

// Column returns the column name if the expression is nothing but a column
// reference.
func (e *Expr) Column() (string, bool) {
	c, ok := e.root.(*columnRef)
	if !ok {
		return "", false
	}
	return c.name, true
}

// Eval evaluates the expression. env returns the value of a column, and
// false if the row or statement has none; Eval then fails with a
// *MissingColumnError. Other errors carry a SQLSTATE (see sqlerr.Code).
func (e *Expr) Eval(env func(col string) (Value, bool)) (Value, error) {
	return e.root.eval(env)
}

// singleExpression checks that the statement is exactly "SELECT <expr>"
// and returns <expr>.
func singleExpression(tree *pg_query.ParseResult, src string) (*pg_query.Node, error) {
	stmts := tree.GetStmts()
	if len(stmts) != 1 {
		return nil, &SyntaxError{Message: "an index expression must be a single expression"}
	}
	sel := stmts[0].GetStmt().GetSelectStmt()
	if sel == nil {
		return nil, &SyntaxError{Message: "an index expression must be a single expression"}
	}
	if len(sel.GetTargetList()) == 0 {
		return nil, &SyntaxError{Message: "empty index expression"}
	}
	extra := len(sel.GetTargetList()) > 1 || sel.GetFromClause() != nil || sel.GetWhereClause() != nil ||
		sel.GetGroupClause() != nil || sel.GetHavingClause() != nil || sel.GetWindowClause() != nil ||
		sel.GetValuesLists() != nil || sel.GetSortClause() != nil || sel.GetLimitCount() != nil ||
		sel.GetLimitOffset() != nil || sel.GetLockingClause() != nil || sel.GetWithClause() != nil ||
		sel.GetDistinctClause() != nil || sel.GetIntoClause() != nil ||
		sel.GetOp() != pg_query.SetOperation_SETOP_NONE
	if extra {
		return nil, &SyntaxError{Message: "an index expression must be a single expression, not a query"}
	}
	rt := sel.GetTargetList()[0].GetResTarget()
	if rt.GetName() != "" {
		return nil, &SyntaxError{Message: "an index expression cannot have an alias", Offset: clampOffset(int(rt.GetLocation())-len(selectPrefix), src)}
	}
	return rt.GetVal(), nil
}

// parser translates a pg_query expression tree into nodes.
type parser struct{ src string }

func (p *parser) offset(loc int32) int { return clampOffset(int(loc)-len(selectPrefix), p.src) }

func (p *parser) unsupported(kind, name string, loc int32) error {
	return &UnsupportedError{Kind: kind, Func: name, Offset: p.offset(loc)}
}

func (p *parser) translate(n *pg_query.Node) (node, error) {
	switch x := n.GetNode().(type) {
	case *pg_query.Node_ColumnRef:
		return p.columnRef(x.ColumnRef)
	case *pg_query.Node_AConst:
		return p.constant(x.AConst)
	case *pg_query.Node_FuncCall:
		return p.funcCall(x.FuncCall)
	case *pg_query.Node_TypeCast:
		return p.typeCast(x.TypeCast)
	case *pg_query.Node_AExpr:
		return p.operator(x.AExpr)
	case *pg_query.Node_SubLink:
		return nil, p.unsupported("expression", "subquery", x.SubLink.GetLocation())
	case *pg_query.Node_CaseExpr:
		return nil, p.unsupported("expression", "CASE", x.CaseExpr.GetLocation())
	case *pg_query.Node_BoolExpr:
		return nil, p.unsupported("operator", strings.TrimSuffix(x.BoolExpr.GetBoolop().String(), "_EXPR"), x.BoolExpr.GetLocation())
	case *pg_query.Node_CoalesceExpr:
		return nil, p.unsupported("function", "coalesce", x.CoalesceExpr.GetLocation())
	case *pg_query.Node_MinMaxExpr:
		name := "greatest"
		if x.MinMaxExpr.GetOp() == pg_query.MinMaxOp_IS_LEAST {
			name = "least"
		}
		return nil, p.unsupported("function", name, x.MinMaxExpr.GetLocation())
	case *pg_query.Node_SqlvalueFunction:
		return nil, p.unsupported("function", strings.ToLower(strings.TrimPrefix(x.SqlvalueFunction.GetOp().String(), "SVFOP_")), x.SqlvalueFunction.GetLocation())
	case *pg_query.Node_NullTest:
		return nil, p.unsupported("operator", "IS NULL", x.NullTest.GetLocation())
	case *pg_query.Node_ParamRef:
		return nil, p.unsupported("expression", "$"+strconv.Itoa(int(x.ParamRef.GetNumber())), x.ParamRef.GetLocation())
	case *pg_query.Node_CollateClause:
		return nil, p.unsupported("expression", "COLLATE", x.CollateClause.GetLocation())
	}
	return nil, p.unsupported("expression", describeNode(n), locationOf(n))
}

func describeNode(n *pg_query.Node) string {
	name := fmt.Sprintf("%T", n.GetNode())
	name = strings.TrimPrefix(name, "*pg_query.Node_")
	return name
}

// locationOf digs a location out of node types translate does not name.
func locationOf(n *pg_query.Node) int32 {
	switch x := n.GetNode().(type) {
	case *pg_query.Node_AArrayExpr:
		return x.AArrayExpr.GetLocation()
	case *pg_query.Node_RowExpr:
		return x.RowExpr.GetLocation()
	case *pg_query.Node_BooleanTest:
		return x.BooleanTest.GetLocation()
	}
	return int32(len(selectPrefix))
}

func (p *parser) columnRef(c *pg_query.ColumnRef) (node, error) {
	fields := c.GetFields()
	if len(fields) != 1 || fields[0].GetString_() == nil {
		return nil, p.unsupported("expression", "qualified column reference", c.GetLocation())
	}
	return &columnRef{name: fields[0].GetString_().GetSval()}, nil
}

func (p *parser) constant(c *pg_query.A_Const) (node, error) {
	switch {
	case c.GetIsnull():
		return &constant{v: Null()}, nil
	case c.GetIval() != nil:
		return &constant{v: Int(int64(c.GetIval().GetIval()))}, nil
	case c.GetSval() != nil:
		return &constant{v: Text(c.GetSval().GetSval())}, nil
	case c.GetFval() != nil:
		// Integers beyond int4 arrive as "float" tokens; bigint ones are
		// fine, anything else (1.5, 1e3, 10^20) would be numeric.
		f := c.GetFval().GetFval()
		if n, err := ParseInteger(f, 64); err == nil {
			return &constant{v: Int(n)}, nil
		}
		return nil, p.unsupported("literal", f, c.GetLocation())
	case c.GetBoolval() != nil:
		return nil, p.unsupported("literal", strconv.FormatBool(c.GetBoolval().GetBoolval()), c.GetLocation())
	}
	return nil, p.unsupported("literal", "bit string", c.GetLocation())
}

// functionName returns the unqualified, lower-case name of a function, or
// "" with the displayable name if it lives in a schema other than
// pg_catalog.
func functionName(names []*pg_query.Node) (name, display string) {
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n.GetString_().GetSval())
	}
	display = strings.Join(parts, ".")
	switch {
	case len(parts) == 1:
		return parts[0], display
	case len(parts) == 2 && parts[0] == "pg_catalog":
		return parts[1], display
	}
	return "", display
}

func (p *parser) funcCall(f *pg_query.FuncCall) (node, error) {
	name, display := functionName(f.GetFuncname())
	spec, ok := functions[name]
	if !ok {
		return nil, p.unsupported("function", display, f.GetLocation())
	}
	if f.GetAggStar() || f.GetAggDistinct() || f.GetAggOrder() != nil || f.GetAggFilter() != nil ||
		f.GetOver() != nil || f.GetAggWithinGroup() || f.GetFuncVariadic() {
		return nil, p.unsupported("expression", display+" with aggregate or window syntax", f.GetLocation())
	}
	args := f.GetArgs()
	if len(args) < spec.minArgs || len(args) > spec.maxArgs {
		want := strconv.Itoa(spec.minArgs) + " argument"
		if spec.maxArgs != spec.minArgs {
			want = fmt.Sprintf("%d or %d arguments", spec.minArgs, spec.maxArgs)
		} else if spec.minArgs > 1 {
			want += "s"
		}
		return nil, &SyntaxError{
			Message: fmt.Sprintf("function %s takes %s, not %d", name, want, len(args)),
			Offset:  p.offset(f.GetLocation()),
		}
	}
	call := &funcCall{fn: spec.fn}
	for i, a := range args {
		if _, named := a.GetNode().(*pg_query.Node_NamedArgExpr); named {
			return nil, p.unsupported("expression", "named argument", a.GetNamedArgExpr().GetLocation())
		}
		// substring(x from 'pattern') and substring(x similar 'p' escape
		// 'e') are the regular-expression forms: a string literal where a
		// position belongs selects them in Postgres.
		if name == "substring" && i > 0 && a.GetAConst().GetSval() != nil {
			return nil, p.unsupported("function", "substring (regular-expression form)", f.GetLocation())
		}
		arg, err := p.translate(a)
		if err != nil {
			return nil, err
		}
		call.args = append(call.args, arg)
	}
	return call, nil
}

func (p *parser) typeCast(c *pg_query.TypeCast) (node, error) {
	tn := c.GetTypeName()
	name, display := functionName(tn.GetNames())
	display = strings.TrimPrefix(display, "pg_catalog.")
	target, ok := castTypes[name]
	if !ok || tn.GetArrayBounds() != nil || tn.GetSetof() || tn.GetPctType() {
		return nil, p.unsupported("cast to type", display, tn.GetLocation())
	}
	cast := &typeCast{to: target, typmod: -1}
	if mods := tn.GetTypmods(); len(mods) > 0 {
		ival := mods[0].GetAConst().GetIval()
		if target != castVarchar || len(mods) != 1 || ival == nil {
			return nil, &SyntaxError{Message: fmt.Sprintf("invalid type modifier for type %s", target), Offset: p.offset(tn.GetLocation())}
		}
		n := ival.GetIval()
		if n < 1 || n > maxVarcharLength {
			return nil, &SyntaxError{Message: fmt.Sprintf("length for type varchar must be between 1 and %d", maxVarcharLength), Offset: p.offset(tn.GetLocation())}
		}
		cast.typmod = int(n)
	}
	arg, err := p.translate(c.GetArg())
	if err != nil {
		return nil, err
	}
	cast.arg = arg
	return cast, nil
}

func (p *parser) operator(a *pg_query.A_Expr) (node, error) {
	var names []string
	for _, n := range a.GetName() {
		names = append(names, n.GetString_().GetSval())
	}
	op := strings.Join(names, ".")
	if a.GetKind() != pg_query.A_Expr_Kind_AEXPR_OP || op != "||" || a.GetLexpr() == nil {
		if a.GetKind() != pg_query.A_Expr_Kind_AEXPR_OP {
			op = strings.ToUpper(strings.TrimPrefix(a.GetKind().String(), "AEXPR_"))
		}
		return nil, p.unsupported("operator", op, a.GetLocation())
	}
	l, err := p.translate(a.GetLexpr())
	if err != nil {
		return nil, err
	}
	r, err := p.translate(a.GetRexpr())
	if err != nil {
		return nil, err
	}
	return &concat{l: l, r: r}, nil
}

// runeToByteOffset converts Postgres's character-based cursor position into
// a byte offset.
func runeToByteOffset(s string, runes int) int {
	for i := range s {
		if runes == 0 {
			return i
		}
		runes--
	}
	return len(s)
}

func clampOffset(off int, src string) int {
	if off < 0 {
		return 0
	}
	if off > len(src) {
		return len(src)
	}
	for off > 0 && off < len(src) && !utf8.RuneStart(src[off]) {
		off--
	}
	return off
}

package planner

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// PostExpr is an expression over combined aggregates and group values that
// the proxy evaluates after the merge, with Postgres's types and
// arithmetic (package merge): sum(x) * 2, round(avg(x), 2),
// count(*)::int, CASE WHEN count(*) > 1 THEN max(x) END, coalesce(sum(x),
// 0), sum(x) / nullif(count(*), 0). Its leaves are aggregates, shard
// columns the group determines and numeric constants; what lies outside
// this set is refused by the planner, so the statement runs over
// intermediate results instead.
type PostExpr struct {
	Op PostOp
	// Agg is an index into Aggregate.Aggs (PostAgg); Col a shard column
	// (PostCol).
	Agg, Col int
	// Literal is a constant's text (PostConst); Int marks an integer
	// constant (int4, or int8 when it does not fit).
	Literal string
	Int     bool
	// Name is the operator (+ - * /), the function (round) or the cast's
	// type (int2, int4, int8, numeric, float4, float8).
	Name string
	Args []*PostExpr
	// Whens are CASE's conditions: Whens[i] chooses Args[i]; the last Arg
	// is the ELSE (a NULL constant when absent).
	Whens []*Predicate
}

// PostOp is the kind of a PostExpr node.
type PostOp uint8

const (
	PostAgg PostOp = iota + 1
	PostCol
	PostConst
	PostNull
	PostBinary // Name: + - * /
	PostNeg
	PostFunc // Name: round
	PostCast // Name: the target type
	PostCase
	PostCoalesce
	PostNullIf
)

func (e *PostExpr) String() string {
	args := func() string {
		s := make([]string, len(e.Args))
		for i, a := range e.Args {
			s[i] = a.String()
		}
		return strings.Join(s, ", ")
	}
	switch e.Op {
	case PostAgg:
		return "agg " + strconv.Itoa(e.Agg+1)
	case PostCol:
		return columnName(e.Col)
	case PostConst:
		return e.Literal
	case PostNull:
		return "NULL"
	case PostBinary:
		return "(" + e.Args[0].String() + " " + e.Name + " " + e.Args[1].String() + ")"
	case PostNeg:
		return "-" + e.Args[0].String()
	case PostFunc:
		return e.Name + "(" + args() + ")"
	case PostCast:
		return e.Args[0].String() + "::" + e.Name
	case PostCoalesce:
		return "coalesce(" + args() + ")"
	case PostNullIf:
		return "nullif(" + args() + ")"
	case PostCase:
		var b strings.Builder
		b.WriteString("CASE")
		for i, w := range e.Whens {
			b.WriteString(" WHEN " + w.String() + " THEN " + e.Args[i].String())
		}
		b.WriteString(" ELSE " + e.Args[len(e.Args)-1].String() + " END")
		return b.String()
	}
	return "?"
}

// castTypes are the casts a PostExpr evaluates, by the name the parser
// gives the type (pg_catalog.int4 for int and integer, ...).
var castTypes = map[string]string{
	"int2": "int2", "smallint": "int2", "int4": "int4", "int": "int4", "integer": "int4",
	"int8": "int8", "bigint": "int8", "numeric": "numeric", "decimal": "numeric",
	"float8": "float8", "float4": "float4", "real": "float4",
}

// postExpr compiles an expression over aggregates of a grouped read's
// select list, ORDER BY or HAVING into a PostExpr, adding the aggregates
// and group values it reads to the shard statement.
func (b *aggBuilder) postExpr(n *pg.Node) (*PostExpr, error) {
	cannot := func() error { return b.refuse("expression over an aggregate (" + exprKey(n) + ")") }
	call, fn, ok, err := b.aggCall(n)
	if err != nil {
		return nil, err
	}
	if ok {
		return &PostExpr{Op: PostAgg, Agg: b.hiddenAggregate(call, fn)}, nil
	}
	if !containsAggregate(n) {
		if sublinkAggregate(n) {
			return nil, cannot()
		}
		switch x := n.GetNode().(type) {
		case *pg.Node_AConst:
			c := x.AConst
			switch v := c.Val.(type) {
			case *pg.A_Const_Ival:
				return &PostExpr{Op: PostConst, Literal: strconv.Itoa(int(v.Ival.Ival)), Int: true}, nil
			case *pg.A_Const_Fval:
				lit := v.Fval.Fval
				if _, err := strconv.ParseInt(lit, 10, 64); err == nil {
					return &PostExpr{Op: PostConst, Literal: lit, Int: true}, nil
				}
				return &PostExpr{Op: PostConst, Literal: lit}, nil
			}
			if c.Isnull {
				return &PostExpr{Op: PostNull}, nil
			}
			return nil, cannot() // strings and booleans: unknown-typed
		case *pg.Node_ParamRef:
			return nil, cannot()
		}
		// A value the group determines, computed by the shards.
		return &PostExpr{Op: PostCol, Col: b.column(n)}, nil
	}
	switch x := n.GetNode().(type) {
	case *pg.Node_AExpr:
		e := x.AExpr
		switch {
		case e.Kind == pg.A_Expr_Kind_AEXPR_NULLIF:
			return b.postArgs(&PostExpr{Op: PostNullIf}, e.Lexpr, e.Rexpr)
		case e.Kind != pg.A_Expr_Kind_AEXPR_OP || len(e.Name) != 1:
			return nil, cannot()
		}
		op := stringValue(e.Name[0])
		if e.Lexpr == nil && op == "-" {
			return b.postArgs(&PostExpr{Op: PostNeg}, e.Rexpr)
		}
		if e.Lexpr == nil || !strings.Contains("+-*/", op) || len(op) != 1 {
			return nil, cannot()
		}
		return b.postArgs(&PostExpr{Op: PostBinary, Name: op}, e.Lexpr, e.Rexpr)
	case *pg.Node_FuncCall:
		f := x.FuncCall
		name := stringValue(f.Funcname[len(f.Funcname)-1])
		if len(f.Funcname) == 2 && stringValue(f.Funcname[0]) != "pg_catalog" || len(f.Funcname) > 2 ||
			name != "round" || f.Over != nil || len(f.Args) < 1 || len(f.Args) > 2 || f.FuncVariadic {
			return nil, cannot()
		}
		if len(f.Args) == 2 {
			if _, ok := f.Args[1].GetNode().(*pg.Node_AConst); !ok {
				return nil, cannot()
			}
		}
		return b.postArgs(&PostExpr{Op: PostFunc, Name: name}, f.Args...)
	case *pg.Node_TypeCast:
		tn := x.TypeCast.TypeName
		if tn == nil || len(tn.Names) == 0 || len(tn.Typmods) > 0 || len(tn.ArrayBounds) > 0 || tn.Setof || tn.PctType {
			return nil, cannot()
		}
		if len(tn.Names) == 2 && stringValue(tn.Names[0]) != "pg_catalog" || len(tn.Names) > 2 {
			return nil, cannot()
		}
		typ, ok := castTypes[stringValue(tn.Names[len(tn.Names)-1])]
		if !ok {
			return nil, cannot()
		}
		return b.postArgs(&PostExpr{Op: PostCast, Name: typ}, x.TypeCast.Arg)
	case *pg.Node_CoalesceExpr:
		return b.postArgs(&PostExpr{Op: PostCoalesce}, x.CoalesceExpr.Args...)
	case *pg.Node_CaseExpr:
		c := x.CaseExpr
		if c.Arg != nil {
			return nil, cannot()
		}
		out := &PostExpr{Op: PostCase}
		for _, w := range c.Args {
			cw, ok := w.Node.(*pg.Node_CaseWhen)
			if !ok {
				return nil, cannot()
			}
			p, err := b.predicate(cw.CaseWhen.Expr)
			if err != nil {
				return nil, err
			}
			r, err := b.postExpr(cw.CaseWhen.Result)
			if err != nil {
				return nil, err
			}
			out.Whens = append(out.Whens, p)
			out.Args = append(out.Args, r)
		}
		def := &PostExpr{Op: PostNull}
		if c.Defresult != nil {
			if def, err = b.postExpr(c.Defresult); err != nil {
				return nil, err
			}
		}
		out.Args = append(out.Args, def)
		return out, nil
	}
	return nil, cannot()
}

func (b *aggBuilder) postArgs(e *PostExpr, args ...*pg.Node) (*PostExpr, error) {
	for _, a := range args {
		x, err := b.postExpr(a)
		if err != nil {
			return nil, err
		}
		e.Args = append(e.Args, x)
	}
	return e, nil
}

// numericCast recognises an aggregate of one argument cast to an integer
// or numeric type: stddev(x::numeric).
func numericCast(f *pg.FuncCall) bool {
	if len(f.Args) != 1 {
		return false
	}
	tc, ok := f.Args[0].GetNode().(*pg.Node_TypeCast)
	if !ok || tc.TypeCast.TypeName == nil || len(tc.TypeCast.TypeName.ArrayBounds) > 0 {
		return false
	}
	names := tc.TypeCast.TypeName.Names
	if len(names) == 0 || len(names) == 2 && stringValue(names[0]) != "pg_catalog" || len(names) > 2 {
		return false
	}
	switch castTypes[stringValue(names[len(names)-1])] {
	case "int2", "int4", "int8", "numeric":
		return true
	}
	return false
}

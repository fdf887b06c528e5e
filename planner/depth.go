package planner

import (
	"errors"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
)

// statementTooComplex is SQLSTATE 54001, which Postgres reports as "stack
// depth limit exceeded"; sqlerr has no name for it yet.
const statementTooComplex = "54001"

// maxNesting bounds the expression depth the planner hands to pg_query.
//
// The raw parser builds left-associative chains (1+1+1..., x::t::t...,
// a JOIN b JOIN c ..., UNION chains, IS NULL IS NULL ...) without
// recursion, so their depth has no limit of its own; pg_query then
// serializes the tree recursively in C, which overflows the thread's stack
// and kills the whole process somewhere above 20,000 levels (8 MB stacks),
// and the Go side refuses to decode more than about 5,000 levels ("proto:
// exceeded maximum recursion depth"). Postgres itself stops such a
// statement in parse analysis with 54001. Parenthesized and other
// right-nested constructs are bounded by the parser's own stack (10,000
// entries), which Postgres and pg_query both report as a 42601 "memory
// exhausted" syntax error.
const maxNesting = 10000

var errTooDeep = sqlerr.New(statementTooComplex, "stack depth limit exceeded").
	WithHint("The statement nests expressions more than %d levels deep; simplify it.", maxNesting)

// parse is pg.Parse behind a guard against statements nested so deeply
// that pg_query would crash the process, and with the parse-depth errors
// mapped as Postgres reports them (54001).
func parse(sql string) (*pg.ParseResult, error) {
	if nestingBound(sql) > maxNesting {
		return nil, errTooDeep
	}
	tree, err := pg.Parse(sql)
	if err != nil && isRecursionLimit(err) {
		return nil, errTooDeep
	}
	return tree, err
}

// isRecursionLimit recognises the protobuf decoder's refusal of a tree
// deeper than its recursion limit.
func isRecursionLimit(err error) bool {
	var pe interface{ Unwrap() error }
	if errors.As(err, &pe) && pe.Unwrap() != nil && isRecursionLimit(pe.Unwrap()) {
		return true
	}
	return strings.Contains(err.Error(), "exceeded maximum recursion depth")
}

// nestingBound returns an upper bound on the depth of the parse tree of
// sql, from its tokens alone. Every operator and every keyword that can
// chain (IS, COLLATE, BETWEEN, ...) may add a level to the expression it
// sits in; commas, AND, OR and CASE branches separate expressions that sit
// side by side (AND and OR lists are flat in the tree), except for the
// chains of a statement (UNION, INTERSECT, EXCEPT, JOIN), which count
// across them; a parenthesized or bracketed group, and CASE ... END, adds
// its own depth to the expression that holds it. The bound is loose by a
// constant factor, never low.
//
// It uses the hand lexer, not pg_query's scanner: it must run before any
// pg_query call sees the text, since pg_query is what crashes on it.
func nestingBound(sql string) int {
	type frame struct {
		ops, child, max int // the current expression's chain and deepest group; the deepest expression
		chain           int // UNION, JOIN, ...: statement-level chains
		isCase          bool
	}
	stack := make([]frame, 1, 8)
	endSegment := func(f *frame) {
		if d := f.ops + f.child; d > f.max {
			f.max = d
		}
		f.ops, f.child = 0, 0
	}
	pop := func() {
		f := &stack[len(stack)-1]
		endSegment(f)
		d := f.max + f.chain + 1
		stack = stack[:len(stack)-1]
		if p := &stack[len(stack)-1]; d > p.child {
			p.child = d
		}
	}
	l := lexer{src: sql}
	best := 0
	for {
		t := l.next()
		top := &stack[len(stack)-1]
		switch t.kind {
		case tokEOF, tokError:
			for len(stack) > 1 {
				pop()
			}
			endSegment(&stack[0])
			return max(best, stack[0].max+stack[0].chain)
		case tokOp:
			top.ops++
		case tokPunct:
			switch sql[t.start:t.end] {
			case "(", "[":
				stack = append(stack, frame{})
			case ")", "]":
				if len(stack) > 1 {
					pop()
				}
			case ",":
				endSegment(top)
			case ";":
				for len(stack) > 1 {
					pop()
				}
				endSegment(&stack[0])
				best = max(best, stack[0].max+stack[0].chain)
				stack[0] = frame{}
			case "::":
				top.ops++
			}
		case tokIdent:
			w := sql[t.start:t.end]
			switch {
			case equalFoldASCII(w, "case"):
				stack = append(stack, frame{isCase: true})
			case equalFoldASCII(w, "end"):
				if top.isCase {
					pop()
				}
			case isOneOf(w, segmentKeywords[:]):
				endSegment(top)
			case isOneOf(w, statementChainKeywords[:]):
				top.chain++
			case isOneOf(w, chainKeywords[:]):
				top.ops++
			}
		}
	}
}

// segmentKeywords separate expressions that the tree holds side by side.
var segmentKeywords = [...]string{"and", "or", "when", "then", "else"}

// statementChainKeywords nest a statement's FROM list or set operation one
// level deeper each, whatever separates them.
var statementChainKeywords = [...]string{"union", "intersect", "except", "join"}

// chainKeywords may nest the expression they appear in one level deeper.
var chainKeywords = [...]string{
	"is", "isnull", "notnull", "not", "collate", "at", "between", "like", "ilike", "similar",
	"in", "overlaps", "escape", "operator", "any", "all", "some",
}

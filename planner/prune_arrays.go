package planner

import (
	"encoding/binary"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// key = ANY(array) with the array a literal ('{1,2,3}', '{...}'::bigint[])
// or a parameter ($1, which drivers bind to a list: pgx's []int64) pins
// its route to the array's elements, and is cut down like an IN list:
// each cluster gets an array of only the elements whose key lives there,
// in the form the client wrote them (the literal's element texts; the
// parameter's element bytes, text or binary, under the same element
// type), so each cluster reads the same values. A literal is the shard
// template's hole (ShardSQL.array); a parameter keeps the statement's
// text and gets a value per cluster (Target.Arg). NULL elements match
// nothing and go nowhere. key <> ALL, NOT and an ANY under an OR are not
// cut (see pinsOf).

// TargetArg replaces one of the client's parameters for one target: the
// ANY array cut to the target's cluster, in the client's format.
type TargetArg struct {
	Index int    // 0-based, among the client's parameters
	Value []byte // the parameter's value
}

// arrayPins remembers the ANY array of a pin (m: its one instance's one
// key) as a list source, so that a route pinned by it is cut per cluster.
func (a *analysis) arrayPins(m map[*instance][]KeyRef, arr *pg.Node) {
	for _, keys := range m {
		holder := arr
		for {
			tc, ok := holder.GetNode().(*pg.Node_TypeCast)
			if !ok {
				break
			}
			holder = tc.TypeCast.Arg
		}
		switch x := holder.GetNode().(type) {
		case *pg.Node_AConst:
			orig := holder.Node
			if sv, ok := x.AConst.Val.(*pg.A_Const_Sval); !ok || strings.Contains(sv.Sval.Sval, `\`) {
				return // a backslash reads differently under standard_conforming_strings: sent whole
			}
			a.inLists = append(a.inLists, inListSource{keys: keys, items: []*pg.Node{{Node: orig}}, array: true,
				replace: func(items []*pg.Node) { holder.Node = items[0].Node }})
		case *pg.Node_ParamRef:
			a.inLists = append(a.inLists, inListSource{keys: keys, array: true})
		}
	}
}

// paramCuttable reports whether the parameter of an ANY array list source
// may take a value per cluster: only when the statement uses it nowhere
// else (SELECT cardinality($1) ... WHERE id = ANY($1) would read the cut).
func paramCuttable(stmt proto.Message, in *inListSource) bool {
	n, uses := int32(in.keys[0].Array.Value.Param), 0
	walk(stmt, func(x *pg.Node) bool {
		if p, ok := x.Node.(*pg.Node_ParamRef); ok && p.ParamRef.Number == n {
			uses++
		}
		return true
	})
	return uses == 1
}

// arrayElementsCut is an ANY array's elements, each in the form it came
// in and with the cluster of its key ("" for none: NULL, or a value no
// key equals).
type arrayElementsCut struct {
	texts     []string // the text form's elements (literal or text parameter)
	raw       [][]byte // the binary form's elements
	elemOID   uint32   // the binary form's element type
	clusterOf []string
	param     int // the parameter (1-based), 0 for a literal
}

// cutArray reads the route's ANY array (Keys[0]) for params and maps
// each element to its cluster. nil (no error) leaves the array whole: a
// text form with more than one brace (nested arrays must have matching
// extents, which Postgres checks and a cut would hide), a dimension
// decoration, or a binary one of several dimensions or with bytes left.
func (r *Route) cutArray(params []Param) (*arrayElementsCut, error) {
	ref := r.Keys[0].Array
	vals, err := ref.values(params)
	if err != nil {
		return nil, err
	}
	c := &arrayElementsCut{param: ref.Value.Param, clusterOf: make([]string, len(vals))}
	text := ref.Value.Literal
	switch {
	case c.param == 0:
	case params[c.param-1].Null:
		return nil, nil
	case params[c.param-1].Binary:
		b := params[c.param-1].Value
		if c.elemOID, c.raw, err = arrayBinaryElements(b, c.param); err != nil {
			return nil, err
		}
		if binary.BigEndian.Uint32(b) != 1 || binaryArrayLen(c.raw) != len(b) {
			return nil, nil
		}
	default:
		text = string(params[c.param-1].Value)
	}
	if c.raw == nil {
		if t := strings.TrimLeft(text, " \t\n\r\v\f"); !strings.HasPrefix(t, "{") || arrayBraces(t) != 1 {
			return nil, nil
		}
		if c.texts, err = arrayTexts(text); err != nil {
			return nil, err
		}
	}
	if len(c.texts)+len(c.raw) != len(vals) {
		return nil, nil // cannot happen: the same parse
	}
	for i, v := range vals {
		k, ok, err := ref.elementKey(r.Group.Index, v)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		s, err := r.Group.ShardFor(k)
		if err != nil {
			return nil, err
		}
		c.clusterOf[i] = s.Cluster
	}
	return c, nil
}

// arrayBraces counts the opening braces of an array's text form outside
// quoted elements and escapes: 1 for a one-dimensional array.
func arrayBraces(s string) int {
	n, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case '{':
			if !quoted {
				n++
			}
		}
	}
	return n
}

// binaryArrayLen is the length of a one-dimensional binary array of els.
func binaryArrayLen(els [][]byte) int {
	n := 20
	for _, e := range els {
		n += 4 + len(e)
	}
	return n
}

// arrayTexts is the text form's elements, "" for a NULL (never kept).
func arrayTexts(s string) ([]string, error) {
	els, err := arrayElements(s)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(els))
	for i, e := range els {
		out[i], _ = e.AsText()
	}
	return out, nil
}

// encode is the array of the elements on cluster, in the input's form:
// the text form ({"1","2"}) or the binary one (one dimension, no NULL).
func (c *arrayElementsCut) encode(cluster string) []byte {
	if c.raw != nil {
		n := 0
		for _, cl := range c.clusterOf {
			if cl == cluster {
				n++
			}
		}
		b := make([]byte, 20, 20+n*12)
		binary.BigEndian.PutUint32(b, 1)
		binary.BigEndian.PutUint32(b[8:], c.elemOID)
		binary.BigEndian.PutUint32(b[12:], uint32(n))
		binary.BigEndian.PutUint32(b[16:], 1)
		for i, cl := range c.clusterOf {
			if cl == cluster {
				b = binary.BigEndian.AppendUint32(b, uint32(len(c.raw[i])))
				b = append(b, c.raw[i]...)
			}
		}
		return b
	}
	b := []byte{'{'}
	first := true
	for i, cl := range c.clusterOf {
		if cl != cluster {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendQuotedElement(b, c.texts[i])
	}
	return append(b, '}')
}

// appendQuotedElement appends s as a double-quoted array element, which
// array_in hands to the element type's input as written.
func appendQuotedElement(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}

// sqlStringLiteral quotes s as an SQL string: E'...' when it holds a
// backslash (read the same whatever standard_conforming_strings says).
func sqlStringLiteral(s string) string {
	q := strings.ReplaceAll(s, "'", "''")
	if strings.Contains(s, `\`) {
		return "E'" + strings.ReplaceAll(q, `\`, `\\`) + "'"
	}
	return "'" + q + "'"
}

// fillArray gives each target its cut of the route's ANY array: the
// literal in the shard template's hole, or the parameter's value.
func (r *Route) fillArray(ts []Target, params []Param, numParams int) error {
	c, err := r.cutArray(params)
	if err != nil {
		return err
	}
	if c == nil { // whole, to every cluster
		for i := range ts {
			if r.Shard != nil {
				if ts[i].SQL, ts[i].Params, err = r.Shard.fill([]int{0}, "", params, numParams); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i := range ts {
		arr := c.encode(ts[i].Cluster)
		lit := ""
		if c.param == 0 {
			lit = sqlStringLiteral(string(arr))
		} else {
			ts[i].Arg = &TargetArg{Index: c.param - 1, Value: arr}
		}
		if r.Shard != nil {
			if ts[i].SQL, ts[i].Params, err = r.Shard.fill(nil, lit, params, numParams); err != nil {
				return err
			}
		}
	}
	return nil
}

// arrayClusters is, for EXPLAIN, the cluster of each element of the
// route's ANY array.
func (r *Route) arrayClusters(params []Param) ([]string, error) {
	c, err := r.cutArray(params)
	if err != nil || c == nil {
		return nil, err
	}
	return c.clusterOf, nil
}

package planner

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// walk calls fn for every *pg.Node reachable from m, depth first, parents
// before children. fn returns false to skip a node's children. Table
// references the tree holds as bare *pg.RangeVar fields (InsertStmt.Relation,
// VacuumRelation.Relation, Constraint.Pktable, ...) are presented wrapped
// in a Node, so callers see every RangeVar exactly once. It goes
// through protobuf reflection, so it reaches every node type the parser
// knows, including ones this package never names; the planner uses it to
// find what a structured pass might miss (table references, sublinks,
// parameters, aggregates). Planning is the cached slow path, so generality
// wins over speed here.
func walk(m proto.Message, fn func(n *pg.Node) bool) {
	if m == nil {
		return
	}
	walkMessage(m.ProtoReflect(), fn, false)
}

var (
	nodeDescriptor     = (&pg.Node{}).ProtoReflect().Descriptor()
	nodeOneof          = nodeDescriptor.Oneofs().Get(0)
	rangeVarDescriptor = (&pg.RangeVar{}).ProtoReflect().Descriptor()
)

func walkMessage(m protoreflect.Message, fn func(n *pg.Node) bool, inNode bool) {
	if !m.IsValid() {
		return
	}
	isNode := false
	switch m.Descriptor() {
	case nodeDescriptor:
		n, ok := m.Interface().(*pg.Node)
		if !ok || n == nil || n.Node == nil {
			return
		}
		if !fn(n) {
			return
		}
		isNode = true
	case rangeVarDescriptor:
		if !inNode {
			rv, _ := m.Interface().(*pg.RangeVar)
			if rv != nil && !fn(&pg.Node{Node: &pg.Node_RangeVar{RangeVar: rv}}) {
				return
			}
		}
	}
	if isNode {
		// A Node is a oneof over every node type: ask which one is set
		// instead of testing hundreds of fields.
		if fd := m.WhichOneof(nodeOneof); fd != nil && fd.Kind() == protoreflect.MessageKind {
			walkMessage(m.Get(fd).Message(), fn, true)
		}
		return
	}
	// Fields in declaration order, not Range's: Range's order is
	// unspecified, and error messages name the first tables found.
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Kind() != protoreflect.MessageKind || !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				walkMessage(l.Get(i).Message(), fn, false)
			}
		case fd.IsMap():
		default:
			walkMessage(v.Message(), fn, false)
		}
	}
}

// maxParam returns the highest $n in the tree.
func maxParam(m proto.Message) int {
	max := 0
	walk(m, func(n *pg.Node) bool {
		if p, ok := n.Node.(*pg.Node_ParamRef); ok && int(p.ParamRef.Number) > max {
			max = int(p.ParamRef.Number)
		}
		return true
	})
	return max
}

// parseVersion is the parse-tree version Deparse insists on; it is taken
// from the parser itself so an upgrade of pg_query_go cannot desync it.
var parseVersion = func() int32 {
	r, err := pg.Parse("SELECT 1")
	if err != nil {
		return 0
	}
	return r.Version
}()

// deparse prints one statement tree as SQL.
func deparse(stmt *pg.Node) (string, error) {
	return pg.Deparse(&pg.ParseResult{Version: parseVersion, Stmts: []*pg.RawStmt{{Stmt: stmt}}})
}

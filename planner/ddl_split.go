package planner

import (
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/vschema"
)

// DDLSplit runs a DROP TABLE or TRUNCATE that names tables of several
// groups. Each cluster gets the statement cut down to the tables that live
// there (a sharded group's tables on every cluster of the group, a main
// table on main's cluster), with the statement's options (IF EXISTS,
// CASCADE, RESTART IDENTITY) kept. The mode is ModeReplicate: the proxy
// runs the parts on the first cluster first, then on the others, in one
// transaction (an implicit one outside a transaction block) that commits
// with two-phase commit, so every table goes or none does. The client sees
// the first cluster's command tag, which is the statement's.
type DDLSplit struct {
	// Groups are the groups of the named tables, in statement order.
	Groups []*vschema.Group
	// Parts are the clusters and their statements, in topology order.
	Parts []DDLPart
}

// DDLPart is one cluster's share of a DDLSplit.
type DDLPart struct {
	Cluster string
	SQL     string // the statement with the tables that live on Cluster
}

// Name implements Primitive.
func (s *DDLSplit) Name() string { return "DDLSplit" }

// Inputs implements Primitive: a DDLSplit is a leaf.
func (s *DDLSplit) Inputs() []Primitive { return nil }

func (s *DDLSplit) mode() RouteMode { return ModeReplicate }

func (s *DDLSplit) targets(*Plan, []Param) ([]Target, error) {
	ts := make([]Target, len(s.Parts))
	for i, p := range s.Parts {
		ts[i] = Target{Cluster: p.Cluster, SQL: p.SQL}
	}
	return ts, nil
}

func (s *DDLSplit) explain(w *explainWriter, _ *Plan, depth int) {
	names := make([]string, len(s.Groups))
	for i, g := range s.Groups {
		names[i] = g.Name
	}
	w.line(depth, "DDLSplit groups=%s (one transaction, two-phase commit)", strings.Join(names, ","))
	for _, p := range s.Parts {
		w.line(depth+1, "%s: %s", p.Cluster, p.SQL)
	}
}

// buildDDLSplit plans a DROP TABLE or TRUNCATE whose tables belong to
// several groups; ok is false for any other statement (which the caller
// refuses).
func (p *Planner) buildDDLSplit(pl *Plan, stmt *pg.Node) (ok bool, err error) {
	var names []utilityRel
	var rebuild func(keep []int) *pg.Node
	switch x := stmt.Node.(type) {
	case *pg.Node_DropStmt:
		d := x.DropStmt
		if d.RemoveType != pg.ObjectType_OBJECT_TABLE {
			return false, nil
		}
		for _, o := range d.Objects {
			names = append(names, nameListRel(o, false))
		}
		rebuild = func(keep []int) *pg.Node {
			return &pg.Node{Node: &pg.Node_DropStmt{DropStmt: &pg.DropStmt{
				Objects: pick(d.Objects, keep), RemoveType: d.RemoveType,
				Behavior: d.Behavior, MissingOk: d.MissingOk,
			}}}
		}
	case *pg.Node_TruncateStmt:
		t := x.TruncateStmt
		for _, r := range t.Relations {
			rv, isRV := r.Node.(*pg.Node_RangeVar)
			if !isRV {
				return false, nil
			}
			names = append(names, utilityRel{schema: rv.RangeVar.Schemaname, name: rv.RangeVar.Relname})
		}
		rebuild = func(keep []int) *pg.Node {
			return &pg.Node{Node: &pg.Node_TruncateStmt{TruncateStmt: &pg.TruncateStmt{
				Relations: pick(t.Relations, keep), RestartSeqs: t.RestartSeqs, Behavior: t.Behavior,
			}}}
		}
	default:
		return false, nil
	}
	split := &DDLSplit{}
	groups := make([]*vschema.Group, len(names))
	for i, n := range names {
		groups[i] = p.lookup(n.schema, n.name).group
		if !slices.Contains(split.Groups, groups[i]) {
			split.Groups = append(split.Groups, groups[i])
		}
	}
	for _, c := range p.vs.Clusters() {
		var keep []int
		for i, g := range groups {
			if slices.Contains(g.Clusters, c.Name) {
				keep = append(keep, i)
			}
		}
		if keep == nil {
			continue
		}
		sql, err := deparse(rebuild(keep))
		if err != nil {
			return false, err
		}
		split.Parts = append(split.Parts, DDLPart{Cluster: c.Name, SQL: sql})
	}
	pl.Root = split
	return true, nil
}

// pick returns the items of nodes at the indices keep, in order.
func pick(nodes []*pg.Node, keep []int) []*pg.Node {
	out := make([]*pg.Node, len(keep))
	for i, k := range keep {
		out[i] = nodes[k]
	}
	return out
}

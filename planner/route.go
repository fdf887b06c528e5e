package planner

import (
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// Opcode says how a Route picks its shards.
type Opcode uint8

const (
	// Unsharded: the one cluster of an unsharded group (main included).
	Unsharded Opcode = iota
	// EqualUnique: one key, so one shard.
	EqualUnique
	// IN: a list of keys, each to its shard; every cluster once.
	IN
	// Scatter: every shard of the group; every cluster once.
	Scatter
	// AnyShard: any one copy of the group's reference tables; the
	// group's first cluster, so the choice is stable.
	AnyShard
	// AllClusters: every cluster of the group, the same statement on
	// each (writes to reference tables, DDL).
	AllClusters
)

var opcodeNames = [...]string{"Unsharded", "EqualUnique", "IN", "Scatter", "AnyShard", "AllClusters"}

func (o Opcode) String() string {
	if int(o) < len(opcodeNames) {
		return opcodeNames[o]
	}
	return "Opcode(?)"
}

// Route sends the statement, unchanged, to the shards of one group.
type Route struct {
	Opcode Opcode
	Group  *vschema.Group
	// Keys are the shard keys of EqualUnique (one) and IN (several).
	Keys []KeyRef
	// MergeReason names what would need merging if the route spans
	// several clusters ("ORDER BY", "aggregate", ...); "" when results of
	// several clusters simply concatenate. Scatter routes with a reason are
	// refused at plan time; IN routes when Targets finds more than one
	// cluster.
	MergeReason string
	// Tables names the sharded tables the statement reads, for messages.
	Tables string
	// Shard is the statement each cluster runs when the route spans
	// several: a merge's rewrite, or the IN list cut down to the
	// cluster's keys. nil sends Plan.SQL unchanged. A route that turns
	// out to need one cluster always sends Plan.SQL.
	Shard *ShardSQL
	// sameParams is set on the Route of a write to every copy of a
	// reference table: Targets refuses parameters that each copy would
	// read differently (see sameParamsCheck).
	sameParams bool
	// Hidden counts the trailing columns of Shard's result that only the
	// merge reads (sort keys outside the select list); the client never
	// sees them.
	Hidden int
	// anyCut: Keys[0] is an ANY array each cluster gets only its
	// elements of (prune_arrays.go).
	anyCut bool
}

// Name implements Primitive.
func (r *Route) Name() string { return "Route" }

// Inputs implements Primitive: a Route is a leaf.
func (r *Route) Inputs() []Primitive { return nil }

func (r *Route) mode() RouteMode {
	switch r.Opcode {
	case IN, Scatter:
		return ModeScatter
	case AllClusters:
		return ModeReplicate
	}
	return ModeSingle
}

func (r *Route) targets(pl *Plan, params []Param) ([]Target, error) {
	g := r.Group
	switch r.Opcode {
	case Unsharded, AnyShard:
		return []Target{clusterTarget(g, g.Clusters[0], r.Opcode == Unsharded)}, nil
	case Scatter, AllClusters:
		if r.sameParams {
			if err := sameParamsCheck(r, params); err != nil {
				return nil, err
			}
		}
		ts := make([]Target, len(g.Clusters))
		for i, c := range g.Clusters {
			ts[i] = clusterTarget(g, c, true)
		}
		if r.Shard != nil && len(ts) > 1 {
			for i := range ts {
				var err error
				if ts[i].SQL, ts[i].Params, err = r.Shard.fill(nil, "", params, pl.NumParams); err != nil {
					return nil, err
				}
			}
		}
		return ts, nil
	case EqualUnique:
		s, err := shardFor(g, r.Keys[0], params)
		if err != nil && pl.Kind != Insert && sqlerr.Code(err) == sqlerr.NullValueNotAllowed || err == nil && s == nil {
			// key = NULL, or key = 7.5 for an integer key, matches no
			// row: any one shard gives the empty answer (or the zero
			// count) with the right shape.
			s, err = g.Shards[0], nil
		}
		if err != nil {
			return nil, err
		}
		return []Target{{Cluster: s.Cluster, Shards: s.Names()}}, nil
	case IN:
		shards, err := keyShards(g, r.Keys, params)
		if err != nil {
			return nil, err
		}
		if len(shards) == 0 {
			// ANY of an empty (or all-NULL) array matches nothing; one
			// shard gives the empty answer with the right row shape.
			shards = g.Shards[:1]
		}
		ts := targetsByCluster(g, shards)
		if len(ts) > 1 && r.MergeReason != "" {
			return nil, mergeError(r.MergeReason, r.Tables, g, len(ts))
		}
		if r.anyCut && len(ts) > 1 {
			if err := r.fillArray(ts, params, pl.NumParams); err != nil {
				return nil, err
			}
		} else if r.Shard != nil && len(ts) > 1 {
			if err := r.fillIN(ts, params, pl.NumParams); err != nil {
				return nil, err
			}
		}
		return ts, nil
	}
	return nil, sqlerr.New(sqlerr.InternalError, "route with unknown opcode %d", r.Opcode)
}

// fillIN gives each target its statement: with a pruned IN list, only
// the items whose key lives on the target's cluster.
func (r *Route) fillIN(ts []Target, params []Param, numParams int) error {
	var clusterOf []string
	if r.Shard.items != nil {
		var err error
		if clusterOf, err = r.itemClusters(params); err != nil {
			return err
		}
	}
	for i := range ts {
		var items []int
		for j, c := range clusterOf {
			if c == ts[i].Cluster {
				items = append(items, j)
			}
		}
		var err error
		if ts[i].SQL, ts[i].Params, err = r.Shard.fill(items, "", params, numParams); err != nil {
			return err
		}
	}
	return nil
}

// keyShards evaluates keys (expanding ANY arrays) to their distinct
// shards.
func keyShards(g *vschema.Group, keys []KeyRef, params []Param) ([]*vschema.Shard, error) {
	shards := make([]*vschema.Shard, 0, len(keys))
	lists := listTypes{}
	add := func(s *vschema.Shard) {
		if !containsShard(shards, s) {
			shards = append(shards, s)
		}
	}
	for _, k := range keys {
		if k.Array != nil {
			ks, err := k.Array.elementKeys(g.Index, params)
			if err != nil {
				return nil, err
			}
			for _, key := range ks {
				s, err := g.ShardFor(key)
				if err != nil {
					return nil, err
				}
				add(s)
			}
			continue
		}
		s, err := shardForKey(g, k, params, lists)
		if err != nil {
			return nil, err
		}
		if s != nil { // else no key equals the value
			add(s)
		}
	}
	return shards, nil
}

// clusterTarget names one cluster of g with the shards it serves.
func clusterTarget(g *vschema.Group, cluster string, withShards bool) Target {
	t := Target{Cluster: cluster}
	if withShards {
		for _, s := range g.Shards {
			if s.Cluster == cluster && t.Shards == nil {
				t.Shards = s.Names() // shared, capacity 1: the next append copies
			} else if s.Cluster == cluster {
				t.Shards = append(t.Shards, s.Name)
			}
		}
	}
	return t
}

// targetsByCluster groups shards into one target per cluster, in the
// group's cluster order, each shard listed once in keyspace order.
func targetsByCluster(g *vschema.Group, shards []*vschema.Shard) []Target {
	var ts []Target
	for _, c := range g.Clusters {
		var t *Target
		for _, s := range g.Shards {
			if s.Cluster != c || !containsShard(shards, s) {
				continue
			}
			if t == nil {
				ts = append(ts, Target{Cluster: c})
				t = &ts[len(ts)-1]
			}
			t.Shards = append(t.Shards, s.Name)
		}
	}
	return ts
}

func containsShard(list []*vschema.Shard, s *vschema.Shard) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *Route) explain(w *explainWriter, pl *Plan, depth int) {
	g := r.Group
	head := "Route " + r.Opcode.String() + " group=" + g.Name
	plain := g.Index != nil && g.Index.Expr == nil
	switch r.Opcode {
	case EqualUnique:
		head += " index=" + g.Index.Name + " key=" + r.Keys[0].render(w.params, plain)
	case IN:
		head += " index=" + g.Index.Name + " keys=(" + explainKeys(r.Keys, w.params, plain) + ")"
	}
	if r.Hidden > 0 {
		head += " hidden=" + strconv.Itoa(r.Hidden)
	}
	w.line(depth, "%s", head)
	switch r.Opcode {
	case Unsharded, AnyShard:
		w.line(depth+1, "cluster: %s", g.Clusters[0])
	case AllClusters:
		w.line(depth+1, "clusters: %s", strings.Join(g.Clusters, ", "))
	case Scatter:
		w.line(depth+1, "shards: %s", describeShards(g.Shards))
	case EqualUnique, IN:
		if !w.resolvable(r.Keys) {
			break
		}
		shards, err := keyShards(g, r.Keys, w.params)
		switch {
		case err != nil:
			w.line(depth+1, "shards: error: %s", errorMessage(err))
		case len(shards) == 0:
			w.line(depth+1, "shards: none (no key can match)")
		default:
			w.line(depth+1, "shards: %s", describeShards(sortShards(g, shards)))
		}
	}
	if r.MergeReason != "" && r.Opcode == IN {
		w.line(depth+1, "single cluster only: %s", r.MergeReason)
	}
	w.line(depth+1, "sql: %s", explainSQL(pl.SQL))
	if r.Shard != nil {
		if r.Shard.items != nil {
			w.line(depth+1, "shard sql (%s cut to each cluster's keys): %s", r.Shard.listKind(), explainSQL(r.Shard.Text))
			r.explainItems(w, depth+1)
		} else {
			w.line(depth+1, "shard sql: %s", explainSQL(r.Shard.Text))
		}
	}
	if r.anyCut && r.Shard == nil {
		w.line(depth+1, "ANY(%s) cut to each cluster's elements", r.Keys[0].Array.Value.String())
		r.explainItems(w, depth+1)
	}
}

// resolvable reports whether every key can be evaluated: literals always,
// parameters when their values are known.
func (w *explainWriter) resolvable(keys []KeyRef) bool {
	for _, k := range keys {
		if !k.literal() && !w.known {
			return false
		}
	}
	return true
}

func sortShards(g *vschema.Group, shards []*vschema.Shard) []*vschema.Shard {
	out := make([]*vschema.Shard, 0, len(shards))
	for _, s := range g.Shards {
		if containsShard(shards, s) {
			out = append(out, s)
		}
	}
	return out
}

func describeShards(shards []*vschema.Shard) string {
	parts := make([]string, len(shards))
	for i, s := range shards {
		parts[i] = s.Name + " (" + s.Cluster + ")"
	}
	return strings.Join(parts, ", ")
}

// oneLine folds a statement onto one EXPLAIN row.
func oneLine(sql string) string {
	return strings.Join(strings.Fields(sql), " ")
}

func errorMessage(err error) string {
	if e, ok := sqlerr.As(err); ok {
		return e.Message + " (SQLSTATE " + e.Code + ")"
	}
	return err.Error()
}

// mergeError is the refusal of a statement whose shards' results would
// need merging.
func mergeError(reason, tables string, g *vschema.Group, clusters int) error {
	e := sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard %s is not supported yet", reason)
	if tables != "" {
		e = e.WithDetail("The statement reads %s on %d clusters, and their results would have to be merged.", tables, clusters)
	}
	hint := "Add a condition on the shard key to run the statement on one shard."
	if g != nil && g.Index != nil {
		hint = "Add a condition on the shard key (" + g.Index.String() + ") to run the statement on one shard."
	}
	return e.WithHint("%s", hint)
}

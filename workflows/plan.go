package workflows

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// Kind is a workflow's kind.
type Kind string

// Workflow kinds.
const (
	MoveTables Kind = "movetables" // tables of main or of another group into a sharded group
	Reshard    Kind = "reshard"    // a sharded group onto new shards
)

// Spec is what a workflow was created with. It holds both topologies'
// text, so any machine that reaches main can run the workflow.
type Spec struct {
	Kind Kind `json:"kind"`
	// From is the topology in effect (YAML text); To is the topology after
	// the move: for MoveTables it names Tables in Group, for Reshard it gives
	// Group its new shards.
	From     string   `json:"from"`
	To       string   `json:"to"`
	FromFile string   `json:"from_file"`
	ToFile   string   `json:"to_file"`
	Group    string   `json:"group"`
	Tables   []string `json:"tables,omitempty"` // MoveTables only
	// ChunkRows is the number of rows per copy chunk (default 10000).
	ChunkRows int `json:"chunk_rows,omitempty"`
	// SnapshotMax caps how long one copy snapshot is held (0: no cap);
	// CopyParallel is the number of tables of one source copied at once
	// (default 1).
	SnapshotMax  time.Duration `json:"snapshot_max,omitempty"`
	CopyParallel int           `json:"copy_parallel,omitempty"`
}

// Plan is a workflow's spec resolved against its two topologies.
type Plan struct {
	Spec     Spec
	Main     *topology.Cluster
	Sources  []*Source
	Targets  []*topology.Cluster // target clusters, in group order
	Tables   []*TablePlan
	from, to *vschema.VSchema
	// reverse: the plan of the stream back from the targets to the
	// sources once traffic is switched (Plan.reversed): nothing is copied.
	reverse bool
}

// reversed is the plan of the reverse stream: the target clusters are
// its sources, the source clusters its targets, rows routed with the
// topology in effect before the workflow (the code the copy routes with).
func (p *Plan) reversed() *Plan {
	q := &Plan{Spec: p.Spec, Main: p.Main, from: p.to, to: p.from, reverse: true}
	for _, s := range p.Sources {
		q.Targets = append(q.Targets, p.from.Topology().Cluster(s.Cluster))
	}
	var clusters []string
	for _, c := range p.Targets {
		clusters = append(clusters, c.Name)
	}
	for _, t := range p.Tables {
		tp := &TablePlan{Name: t.Name, Route: p.from.Table(t.Name.Schema, t.Name.Name), From: t.Route, Sources: clusters}
		if t.Route.Reference {
			tp.Sources = clusters[:1]
		}
		q.Tables = append(q.Tables, tp)
	}
	for _, c := range p.Targets {
		src := &Source{Cluster: c.Name, DSN: c.DSN}
		for _, t := range q.Tables {
			if slices.Contains(t.Sources, c.Name) {
				src.Tables = append(src.Tables, t)
			}
		}
		q.Sources = append(q.Sources, src)
	}
	return q
}

// serving returns the plan whose sources serve the traffic: the plan
// itself, or its reverse once traffic is on the targets.
func (p *Plan) serving(traffic string) *Plan {
	if traffic == TrafficTarget {
		return p.reversed()
	}
	return p
}

// Source is one source cluster and the tables copied and streamed from it.
type Source struct {
	Cluster string
	DSN     string
	Tables  []*TablePlan
}

// TablePlan is one table of a workflow.
type TablePlan struct {
	Name topology.QualifiedName
	// Route is the table as the target topology routes it; From as the
	// topology in effect does.
	Route, From *vschema.Table
	// Sources are the clusters it is copied from: every cluster of the
	// source group for a sharded table, the first one for a reference table.
	Sources []string
}

func (p *Plan) chunkRows() int {
	if p.Spec.ChunkRows > 0 {
		return p.Spec.ChunkRows
	}
	return 10000
}

// targetIndex returns the position of a cluster in p.Targets, or -1.
func (p *Plan) targetIndex(cluster string) int {
	return slices.IndexFunc(p.Targets, func(c *topology.Cluster) bool { return c.Name == cluster })
}

// table returns the plan of a table, or nil.
func (p *Plan) table(q topology.QualifiedName) *TablePlan {
	for _, t := range p.Tables {
		if t.Name == q {
			return t
		}
	}
	return nil
}

func refused(format string, args ...any) *sqlerr.Error {
	return sqlerr.New(sqlerr.ObjectNotInPrerequisiteState, format, args...)
}

// NewPlan resolves a spec. It refuses, naming the problem, a spec whose
// topologies do not describe the move.
func NewPlan(spec Spec) (*Plan, error) {
	if spec.SnapshotMax < 0 || spec.CopyParallel < 0 || spec.ChunkRows < 0 {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "chunk rows, snapshot cap and copy parallelism cannot be negative")
	}
	from, err := parseTopology(spec.FromFile, spec.From)
	if err != nil {
		return nil, err
	}
	to, err := parseTopology(spec.ToFile, spec.To)
	if err != nil {
		return nil, err
	}
	p := &Plan{Spec: spec, from: from, to: to}
	fm, tm := from.Topology().Cluster(from.Main().Clusters[0]), to.Topology().Cluster(to.Main().Clusters[0])
	if fm.DSN != tm.DSN {
		return nil, refused("the two topologies have different main clusters (%s, %s)", fm.Name, tm.Name)
	}
	p.Main = fm
	tg := to.Group(spec.Group)
	if tg == nil || tg.Unsharded {
		return nil, refused("group %q is not a sharded group of %s", spec.Group, spec.ToFile)
	}
	targets := tg.Clusters
	var srcClusters []string
	switch spec.Kind {
	case MoveTables:
		srcClusters, err = p.moveTables(tg)
	case Reshard:
		srcClusters, targets, err = p.reshard(tg)
	default:
		return nil, refused("unknown workflow kind %q (movetables or reshard)", spec.Kind)
	}
	if err != nil {
		return nil, err
	}
	if err := p.refusePlacedGroups(); err != nil {
		return nil, err
	}
	for _, c := range targets {
		p.Targets = append(p.Targets, to.Topology().Cluster(c))
	}
	for _, c := range srcClusters {
		sc := from.Topology().Cluster(c)
		for _, t := range p.Targets {
			if t.Name == sc.Name || t.DSN == sc.DSN {
				return nil, refused("cluster %s is both a source and a target", t.Name).
					WithHint("Place the new shards on clusters (databases) that do not hold the source's tables.")
			}
		}
		src := &Source{Cluster: c, DSN: sc.DSN}
		for _, t := range p.Tables {
			if slices.Contains(t.Sources, c) {
				src.Tables = append(src.Tables, t)
			}
		}
		p.Sources = append(p.Sources, src)
	}
	return p, nil
}

// refusePlacedGroups refuses a workflow over a group that places keys by
// value (a `list`, `lookup_clusters` or `placement: lookup`) in either
// topology: the copy and the stream route rows by the file's placements
// only, so a key the directory places would be copied to its function's
// shard, and a reshard of the function's shards does not carry the
// placed clusters' shards.
func (p *Plan) refusePlacedGroups() error {
	groups := map[string]bool{p.Spec.Group: true}
	for _, t := range p.Tables {
		if t.From != nil && t.From.Group != nil {
			groups[t.From.Group.Name] = true
		}
	}
	for _, v := range []*vschema.VSchema{p.from, p.to} {
		for name := range groups {
			g := v.Topology().Group(name)
			if g != nil && (g.Lookup() || len(g.List) > 0 || len(g.LookupClusters) > 0) {
				return sqlerr.New(sqlerr.FeatureNotSupported, "group %s places keys by value (list, lookup_clusters or placement: lookup): workflows do not move such groups", name).
					WithHint("Move a tenant with shardgate tenant place (rows are not moved), or remove the group's placements first.")
			}
		}
	}
	return nil
}

func parseTopology(file, text string) (*vschema.VSchema, error) {
	t, err := topology.Parse(file, []byte(text))
	if err != nil {
		return nil, err
	}
	return vschema.Build(t)
}

// moveTables plans a MoveTables into group tg: of tables of main, or of
// tables of one other sharded group (its member tables, each read from
// every cluster of that group, and its reference tables, read from the
// first). A table the target topology lists among tg's reference tables
// is loaded on every target. It returns the source clusters.
func (p *Plan) moveTables(tg *vschema.Group) ([]string, error) {
	if len(p.Spec.Tables) == 0 {
		return nil, refused("movetables needs at least one table")
	}
	var sg *vschema.Group
	for _, name := range p.Spec.Tables {
		q, err := topology.ParseQualifiedName(name)
		if err != nil {
			return nil, err
		}
		ft := p.from.Table(q.Schema, q.Name)
		switch g := ft.Group; {
		case g.Name == tg.Name:
			return nil, refused("table %s is in group %s already in %s", q, g.Name, p.Spec.FromFile)
		case sg == nil:
			sg = g
		case g != sg:
			return nil, refused("tables %s and %s are in different groups of %s (%s, %s)", p.Spec.Tables[0], q, p.Spec.FromFile, sg.Name, g.Name).
				WithHint("Move the tables of each group with a workflow of their own.")
		}
		rt := p.to.Table(q.Schema, q.Name)
		if rt.Group.Name != tg.Name {
			return nil, refused("table %s is not in group %s of %s", q, tg.Name, p.Spec.ToFile).
				WithHint("List it under the group's tables (or reference) in the target topology.")
		}
		if err := checkExpressionColumns(rt); err != nil {
			return nil, err
		}
		if len(rt.SecondaryIndexes) > 0 || len(ft.SecondaryIndexes) > 0 {
			si := append(slices.Clone(rt.SecondaryIndexes), ft.SecondaryIndexes...)[0]
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "table %s has the global secondary index %s: movetables does not build or move lookup tables",
				q, si.Name).
				WithHint("Move the table without the index, then add the index to the topology (it is backfilled).")
		}
		srcs := sg.Clusters
		if !ft.Sharded() {
			srcs = srcs[:1] // main, or a reference table: every cluster has it all
		}
		p.Tables = append(p.Tables, &TablePlan{Name: q, Route: rt, From: ft, Sources: srcs})
	}
	var sources []string
	for _, t := range p.Tables {
		for _, c := range t.Sources {
			if !slices.Contains(sources, c) {
				sources = append(sources, c)
			}
		}
	}
	return sources, nil
}

func checkExpressionColumns(t *vschema.Table) error {
	if t.Sharded() && len(t.KeyColumns()) == 0 {
		return refused("table %s has no shard key columns", t)
	}
	return nil
}

// router sends rows of one table to target clusters with the target
// topology's vschema: Table.KeyFromColumns and Group.ShardFor, the code
// the proxy routes with.
type router struct {
	p    *Plan
	t    *TablePlan
	cols []string        // the key columns
	vals []keyexpr.Value // the current row's key values, by cols
	all  []int           // every target, for reference tables
}

func newRouter(p *Plan, t *TablePlan) *router {
	r := &router{p: p, t: t, cols: t.Route.KeyColumns()}
	r.vals = make([]keyexpr.Value, len(r.cols))
	for i := range p.Targets {
		r.all = append(r.all, i)
	}
	return r
}

func (r *router) env(col string) (keyexpr.Value, bool) {
	for i, c := range r.cols {
		if c == col {
			return r.vals[i], true
		}
	}
	return keyexpr.Value{}, false
}

// route returns the target clusters (positions in Plan.Targets) of a row
// whose key column values are r.vals.
func (r *router) route() ([]int, error) {
	if !r.t.Route.Sharded() {
		return r.all, nil
	}
	key, err := r.t.Route.KeyFromColumns(r.env)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", r.t.Name, err)
	}
	s, err := r.t.Route.Group.ShardFor(key)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", r.t.Name, err)
	}
	i := r.p.targetIndex(s.Cluster)
	if i < 0 {
		return nil, sqlerr.New(sqlerr.InternalError, "shard %s of %s has no target cluster", s.Name, r.t.Name)
	}
	return []int{i}, nil
}

func slotName(id int64, cluster string) string {
	return fmt.Sprintf("shardgate_wf%d_%s", id, sanitize(cluster))
}

func pubName(id int64) string { return fmt.Sprintf("shardgate_wf%d", id) }

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '_'
	}, s)
}

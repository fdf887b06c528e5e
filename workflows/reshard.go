package workflows

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// reshard plans a reshard of group tg: the shards that change (their key
// range, their cluster, or every shard when the index changes) move from
// the clusters holding them to the clusters of their replacements; the
// shards that stay as they are take no part. Every member and reference
// table moves, and the lookup table of every global secondary index of
// the group (a routed table of its own, sharded by the indexed value).
// It returns the source and target clusters.
func (p *Plan) reshard(tg *vschema.Group) (sources, targets []string, err error) {
	fg := p.from.Group(tg.Name)
	if fg == nil || fg.Unsharded {
		return nil, nil, refused("group %q is not a sharded group of %s", tg.Name, p.Spec.FromFile)
	}
	names := func(ts []*vschema.Table) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.String())
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(names(fg.Tables), names(tg.Tables)) || !slices.Equal(names(fg.Reference), names(tg.Reference)) {
		return nil, nil, refused("group %s has different tables in %s and %s", tg.Name, p.Spec.FromFile, p.Spec.ToFile).
			WithHint("A reshard moves a group's tables as they are; move tables in or out with movetables.")
	}
	keysChange := slices.ContainsFunc(tg.Tables, func(t *vschema.Table) bool {
		return !slices.Equal(t.KeyColumns(), p.from.Table(t.Schema, t.Name).KeyColumns())
	})
	sources, targets, err = changedClusters(p.from.Topology().Group(tg.Name), p.to.Topology().Group(tg.Name), keysChange)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range append(slices.Clone(tg.Tables), tg.Reference...) {
		ft := p.from.Table(t.Schema, t.Name)
		tp := &TablePlan{Name: topology.QualifiedName{Schema: t.Schema, Name: t.Name}, Route: t, From: ft, Sources: sources}
		if t.Reference {
			tp.Sources = sources[:1]
		}
		if err := checkExpressionColumns(t); err != nil {
			return nil, nil, err
		}
		p.Tables = append(p.Tables, tp)
	}
	for _, si := range tg.SecondaryIndexes {
		i := slices.IndexFunc(fg.SecondaryIndexes, func(f *vschema.SecondaryIndex) bool { return f.Name == si.Name })
		if i < 0 || fg.SecondaryIndexes[i].Table.String() != si.Table.String() || fg.SecondaryIndexes[i].Column != si.Column {
			return nil, nil, refused("group %s has different global secondary indexes in %s and %s (%s)", tg.Name, p.Spec.FromFile, p.Spec.ToFile, si.Name).
				WithHint("A reshard moves a group's indexes as they are.")
		}
		lt := si.Lookup
		tp := &TablePlan{Name: topology.QualifiedName{Schema: lt.Schema, Name: lt.Name}, Route: lt, From: fg.SecondaryIndexes[i].Lookup, Sources: sources}
		p.Tables = append(p.Tables, tp)
	}
	if len(fg.SecondaryIndexes) != len(tg.SecondaryIndexes) {
		return nil, nil, refused("group %s has different global secondary indexes in %s and %s", tg.Name, p.Spec.FromFile, p.Spec.ToFile).
			WithHint("A reshard moves a group's indexes as they are.")
	}
	return sources, targets, nil
}

// changedClusters returns the clusters of the shards that change in a
// reshard (from) and of the shards that replace them (to). A shard stays
// when the index is the same (and, for modulo, the number of shards) and
// the other topology has the same shard on the same cluster. A cluster
// holding both shards that change and shards that stay is refused: its
// rows could not be told apart by cluster. When a table's key columns
// change (keysChange), every shard moves.
func changedClusters(fg, tg *topology.Group, keysChange bool) (sources, targets []string, err error) {
	same := !keysChange && sameIndex(fg.Index, tg.Index) && (fg.Index.Function != topology.FunctionModulo || len(fg.Shards) == len(tg.Shards))
	stays := func(s *topology.Shard, other *topology.Group) bool {
		return same && slices.ContainsFunc(other.Shards, func(o *topology.Shard) bool { return o.Name == s.Name && o.Cluster == s.Cluster })
	}
	split := func(g, other *topology.Group, file string) ([]string, error) {
		var moved, kept []string
		for _, s := range g.Shards {
			if stays(s, other) {
				kept = append(kept, s.Cluster)
			} else if !slices.Contains(moved, s.Cluster) {
				moved = append(moved, s.Cluster)
			}
		}
		for _, c := range moved {
			if slices.Contains(kept, c) {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "cluster %s holds shards of group %s that change and shards that stay (%s)", c, g.Name, file).
					WithHint("Move every shard of a cluster in one reshard, or place the new shards on other clusters.")
			}
		}
		return moved, nil
	}
	if sources, err = split(fg, tg, "before"); err != nil {
		return nil, nil, err
	}
	if targets, err = split(tg, fg, "after"); err != nil {
		return nil, nil, err
	}
	if len(sources) == 0 {
		return nil, nil, refused("group %s has the same shards in both topologies: nothing to reshard", fg.Name)
	}
	return sources, targets, nil
}

func sameIndex(a, b *topology.Index) bool {
	exprText := func(ix *topology.Index) string {
		if ix.Expression == nil {
			return ""
		}
		return ix.Expression.String()
	}
	return a.Column == b.Column && exprText(a) == exprText(b) && a.Type == b.Type && a.Function == b.Function
}

// feeds reports whether source may send rows of the table to target i:
// always with one source, when the groups (the table's before and after)
// are not sharded by xxhash or when their indexes or the table's key
// columns differ (the key ranges of the two
// topologies are then ranges of different keys), else when a key range the source holds overlaps one
// target i takes.
func feeds(p *Plan, tp *TablePlan, source string, i int) bool {
	if len(tp.Sources) == 1 || !tp.Route.Sharded() {
		return true
	}
	from := p.Spec.Group // a reshard's, and its lookup tables' (routed tables of no group of their own)
	if p.Spec.Kind == MoveTables {
		from = tp.From.Group.Name
	}
	fg, tg := p.from.Topology().Group(from), p.to.Topology().Group(p.Spec.Group)
	if fg.Index.Function != topology.FunctionXXHash || !sameIndex(fg.Index, tg.Index) ||
		!slices.Equal(tp.From.KeyColumns(), tp.Route.KeyColumns()) {
		return true
	}
	overlaps := func(a, b *topology.Shard) bool {
		return (b.End == nil || topology.CompareKeys(a.Start, b.End) < 0) && (a.End == nil || topology.CompareKeys(b.Start, a.End) < 0)
	}
	for _, ts := range tg.Shards {
		if ts.Cluster != p.Targets[i].Name {
			continue
		}
		for _, fs := range fg.Shards {
			if fs.Cluster == source && overlaps(ts, fs) {
				return true
			}
		}
	}
	return false
}

// shared reports whether target i takes rows of the table from more than
// one source (a merge).
func shared(p *Plan, tp *TablePlan, i int) bool {
	n := 0
	for _, s := range tp.Sources {
		if feeds(p, tp, s, i) {
			n++
		}
	}
	return n > 1
}

// checkMerge refuses a merge it cannot apply exactly. When one target
// takes a table's rows from several sources, the streams of those
// sources apply concurrently: that is exact as long as one primary key
// can only ever be on one source, that is when the columns of the shard
// key that places rows on the sources are all in the primary key. A row
// whose key is not could move from one source to another, and its delete
// on the first could be applied after its insert from the second.
func checkMerge(p *Plan, info func(topology.QualifiedName) *tableInfo) error {
	for _, tp := range p.Tables {
		if !tp.From.Sharded() {
			continue
		}
		for i, tc := range p.Targets {
			if !shared(p, tp, i) {
				continue
			}
			ti := info(tp.Name)
			for _, k := range tp.From.KeyColumns() {
				if !slices.Contains(ti.PK, k) {
					return sqlerr.New(sqlerr.FeatureNotSupported,
						"target cluster %s would take rows of %s from several source clusters, and its shard key column %q is not in its primary key (%s)",
						tc.Name, tp.Name, k, strings.Join(ti.PK, ", ")).
						WithHint("A merge is exact only when a row cannot move between source shards: make the shard key part of the primary key, or merge onto clusters that take each key range from one source.")
				}
			}
		}
	}
	return nil
}

// checkExact refuses, before a switch holds anything, the switch whose
// stream (the one that runs once it is decided) checkMerge refuses: a
// reverse of a split is a merge.
func checkExact(ctx context.Context, p *Plan) error {
	info := map[topology.QualifiedName]*tableInfo{}
	for _, src := range p.Sources {
		conn, err := pgx.Connect(ctx, src.DSN)
		if err != nil {
			return fmt.Errorf("%s: %w", src.Cluster, err)
		}
		for _, t := range src.Tables {
			if info[t.Name] == nil {
				if info[t.Name], err = readTable(ctx, conn, t.Name, src.Cluster); err != nil {
					conn.Close(context.Background())
					return err
				}
			}
		}
		conn.Close(context.Background())
	}
	return checkMerge(p, func(q topology.QualifiedName) *tableInfo { return info[q] })
}

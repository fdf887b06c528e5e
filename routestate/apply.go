package routestate

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// Effective is the routing in force: the file's topology overlaid with a
// revision.
type Effective struct {
	Topology *topology.Topology // with Overrides naming each decided part
	VSchema  *vschema.VSchema
	Rev      Revision
}

// Apply overlays revision rev's state on the file's topology t and builds
// the effective routing. It is pure: t is not modified (the groups it
// changes are copied). GSI states override the file's (an index the file
// no longer declares is ignored); a switched workflow's group takes the
// target layout (reshard: the target's shards, index and clusters;
// movetables: its tables leave main for the group). A part the state
// decides that equals the file's is not listed as an override. Only
// switches of reads and writes together are routed; a state with reads
// switched alone is refused (0A000), the proxy routing every statement of
// a table with one layout.
func Apply(t *topology.Topology, rev Revision) (*Effective, error) {
	e := *t
	e.Groups = slices.Clone(t.Groups)
	e.Clusters = slices.Clone(t.Clusters)
	e.Overrides = nil
	origin := rev.Origin()
	st := rev.State
	for _, id := range st.SwitchOrder() {
		sw := st.Switched[id]
		if !sw.Reads && !sw.Writes {
			continue
		}
		if !sw.Writes {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "workflow %s switches reads without writes: the proxy routes a table's reads and writes with one layout", id)
		}
		if err := applySwitch(&e, sw, fmt.Sprintf("%s, workflow %s", origin, id)); err != nil {
			return nil, fmt.Errorf("workflow %s: %w", id, err)
		}
	}
	names := make([]string, 0, len(st.GSI))
	for n := range st.GSI {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		state := st.GSI[name]
		if state != GSIBackfilling && state != GSIActive {
			return nil, fmt.Errorf("secondary index %s: unknown state %q", name, state)
		}
		for gi, g := range e.Groups {
			for si, x := range g.SecondaryIndexes {
				if x.Name != name || x.State == state {
					continue
				}
				ng := *g
				ng.SecondaryIndexes = slices.Clone(g.SecondaryIndexes)
				nx := *x
				nx.State = state
				ng.SecondaryIndexes[si] = &nx
				e.Groups[gi] = &ng
				e.Overrides = append(e.Overrides, topology.Override{Key: "groups." + g.Name + ".secondary_indexes." + name, Origin: origin})
			}
		}
	}
	applyDirectory(&e, st.Directory, origin)
	vs, err := vschema.Build(&e)
	if err != nil {
		return nil, fmt.Errorf("routing %s: %w", origin, err)
	}
	return &Effective{Topology: &e, VSchema: vs, Rev: rev}, nil
}

// SwitchOrder is the order switched workflows apply in: by workflow id,
// numerically, so a later workflow's layout of a group wins over an
// earlier one's (a split of a shard after the reshard that made it).
// Apply and the write-back (Edit) both follow it.
func (s State) SwitchOrder() []string {
	ids := make([]string, 0, len(s.Switched))
	for id := range s.Switched {
		ids = append(ids, id)
	}
	sort.SliceStable(ids, func(i, j int) bool {
		a, errA := strconv.ParseInt(ids[i], 10, 64)
		b, errB := strconv.ParseInt(ids[j], 10, 64)
		if errA != nil || errB != nil || a == b {
			return ids[i] < ids[j]
		}
		return a < b
	})
	return ids
}

func applySwitch(e *topology.Topology, sw *Switch, origin string) error {
	to, err := topology.Parse("workflow target", []byte(sw.To))
	if err != nil {
		return fmt.Errorf("target topology: %w", err)
	}
	tg := to.Group(sw.Group)
	if tg == nil || tg.Unsharded {
		return fmt.Errorf("target topology has no sharded group %s", sw.Group)
	}
	gi := slices.IndexFunc(e.Groups, func(g *topology.Group) bool { return g.Name == sw.Group })
	if gi < 0 {
		return fmt.Errorf("the topology file has no group %s", sw.Group)
	}
	// The target's clusters the group now uses.
	for _, s := range tg.Shards {
		c := to.Cluster(s.Cluster)
		if have := e.Cluster(c.Name); have != nil {
			if have.DSN != c.DSN {
				return fmt.Errorf("cluster %s has another dsn in the file than in the workflow's target topology", c.Name)
			}
			continue
		}
		e.Clusters = append(e.Clusters, c)
	}
	g := *e.Groups[gi]
	switch sw.Kind {
	case "reshard":
		if sameShards(g.Shards, tg.Shards) {
			return nil
		}
		g.Index, g.Shards = tg.Index, tg.Shards
		e.Groups[gi] = &g
		e.Overrides = append(e.Overrides, topology.Override{Key: "groups." + g.Name, Origin: origin})
	case "movetables":
		mi := slices.IndexFunc(e.Groups, func(g *topology.Group) bool { return g.Name == topology.MainGroup })
		main := *e.Groups[mi]
		main.Tables = slices.Clone(main.Tables)
		g.Tables = slices.Clone(g.Tables)
		for _, name := range sw.Tables {
			qn, err := topology.ParseQualifiedName(name)
			if err != nil {
				return err
			}
			if g.Table(qn) != nil {
				continue // the file has it there already
			}
			tt := tg.Table(qn)
			if tt == nil {
				return fmt.Errorf("target topology has no table %s in group %s", name, sw.Group)
			}
			main.Tables = slices.DeleteFunc(main.Tables, func(x *topology.Table) bool { return x.QualifiedName == qn })
			g.Tables = append(g.Tables, tt)
			e.Overrides = append(e.Overrides, topology.Override{Key: "tables." + qn.String(), Origin: origin})
		}
		e.Groups[gi], e.Groups[mi] = &g, &main
	default:
		return fmt.Errorf("unknown switch kind %q", sw.Kind)
	}
	return nil
}

func sameShards(a, b []*topology.Shard) bool {
	return slices.EqualFunc(a, b, func(x, y *topology.Shard) bool { return x.Name == y.Name && x.Cluster == y.Cluster })
}

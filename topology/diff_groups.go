package topology

import (
	"fmt"
	"slices"
	"strings"
)

func (d *differ) clusters() {
	for _, n := range d.new.Clusters {
		o := d.old.Cluster(n.Name)
		key := "clusters." + n.Name
		if o != nil {
			d.replicas(o, n)
		}
		switch {
		case o == nil:
			d.add(ChangeApplied, key, "cluster %s added (%s)", n.Name, location(n.DSN))
		case o.DSN == n.DSN:
		case location(o.DSN) == location(n.DSN):
			if change := viewChange(statementView(o.DSN), statementView(n.DSN)); change != "" && clusterHoldsData(d.old, n.Name) {
				d.refuse(key+".dsn", hintView, "cluster %s: dsn changes what statements see in database %s: %s", n.Name, location(n.DSN), change)
				continue
			}
			d.add(ChangeApplied, key+".dsn", "cluster %s: dsn changes, same database %s", n.Name, location(n.DSN))
		default:
			// The groups and shards that use it say whether this moves rows.
			d.add(ChangeApplied, key+".dsn", "cluster %s now points to %s instead of %s", n.Name, location(n.DSN), location(o.DSN))
		}
	}
	for _, o := range d.old.Clusters {
		if d.new.Cluster(o.Name) == nil {
			d.add(ChangeApplied, "clusters."+o.Name, "cluster %s removed", o.Name)
		}
	}
}

// replicas reports the standbys a reload adds or removes, and a new max_lag.
func (d *differ) replicas(o, n *Cluster) {
	key := "clusters." + n.Name + ".replicas"
	has := func(c *Cluster, dsn string) bool {
		for _, r := range c.Replicas {
			if r.DSN == dsn {
				return true
			}
		}
		return false
	}
	for _, r := range n.Replicas {
		if !has(o, r.DSN) {
			d.add(ChangeApplied, key, "cluster %s: replica %s added", n.Name, location(r.DSN))
		}
	}
	for _, r := range o.Replicas {
		if !has(n, r.DSN) {
			d.add(ChangeApplied, key, "cluster %s: replica %s removed", n.Name, location(r.DSN))
		}
	}
	if o.FailoverBuffer != n.FailoverBuffer {
		d.add(ChangeApplied, "clusters."+n.Name+".failover_buffer", "cluster %s: failover_buffer %s instead of %s", n.Name, n.FailoverBuffer, o.FailoverBuffer)
	}
	if o.MaxLag != n.MaxLag {
		d.add(ChangeApplied, "clusters."+n.Name+".max_lag", "cluster %s: max_lag %q instead of %q", n.Name, n.MaxLag, o.MaxLag)
	}
}

// holdsData reports whether rows may live in a group: main always (its
// sequences, shardgate's metadata and every table not named), another
// group when it names a table.
func holdsData(g *Group) bool {
	return g.Name == MainGroup || len(g.Tables) > 0 || len(g.Reference) > 0
}

func (d *differ) groups() {
	for _, n := range d.new.Groups {
		o := d.old.Group(n.Name)
		key := "groups." + n.Name
		switch {
		case o == nil:
			d.add(ChangeApplied, key, "group %s added (%s)", n.Name, layout(n))
		case o.Unsharded && n.Unsharded:
			d.unshardedGroup(o, n)
		case o.Unsharded != n.Unsharded:
			msg := fmt.Sprintf("group %s changes from %s to %s", n.Name, layout(o), layout(n))
			if holdsData(o) {
				d.refuse(key, hintMoveData, "%s", msg)
			} else {
				d.add(ChangeApplied, key, "%s (it names no table)", msg)
			}
		default:
			d.shardedGroup(o, n)
			d.placementChanges(o, n)
		}
	}
	for _, o := range d.old.Groups {
		if d.new.Group(o.Name) == nil {
			// Its tables' moves are changes of their own (tables).
			d.add(ChangeApplied, "groups."+o.Name, "group %s removed", o.Name)
		}
	}
}

// layout describes where a group's rows live, for messages.
func layout(g *Group) string {
	if g.Unsharded {
		return "unsharded on cluster " + g.Cluster
	}
	return "sharded by " + indexKeyText(g.Index) + ", shards " + shardList(g)
}

func indexKeyText(ix *Index) string {
	if ix.Expression != nil {
		return "expression " + ix.Expression.String()
	}
	return "column " + ix.Column
}

func (d *differ) unshardedGroup(o, n *Group) {
	lo, ln := clusterLocation(d.old, o.Cluster), clusterLocation(d.new, n.Cluster)
	key := "groups." + n.Name + ".cluster"
	what := "group " + n.Name
	if n.Name == MainGroup {
		what = "the main group"
	}
	switch {
	case lo == ln && o.Cluster == n.Cluster:
	case lo == ln:
		d.add(ChangeApplied, key, "%s moves from cluster %s to %s, the same database %s", what, o.Cluster, n.Cluster, ln)
	case !holdsData(o):
		d.add(ChangeApplied, key, "%s moves from cluster %s to %s (it names no table)", what, o.Cluster, n.Cluster)
	case o.Cluster == n.Cluster:
		d.refuse(key, hintDSN, "%s moves to another database: cluster %s now points to %s instead of %s", what, n.Cluster, ln, lo)
	default:
		d.refuse(key, hintMoveData, "%s moves from cluster %s to %s", what, o.Cluster, n.Cluster)
	}
}

func (d *differ) shardedGroup(o, n *Group) {
	key := "groups." + n.Name + ".index"
	if o.Index.Name != n.Index.Name {
		d.add(ChangeApplied, key+".name", "index of group %s renamed from %s to %s", n.Name, o.Index.Name, n.Index.Name)
	}
	data := holdsData(o)
	var keyChanges []string
	if ko, kn := indexKeyText(o.Index), indexKeyText(n.Index); ko != kn {
		keyChanges = append(keyChanges, fmt.Sprintf("index of group %s changes its key from %s to %s", n.Name, ko, kn))
	}
	if o.Index.Type != n.Index.Type {
		keyChanges = append(keyChanges, fmt.Sprintf("index of group %s changes its type from %s to %s", n.Name, o.Index.Type, n.Index.Type))
	}
	if o.Index.Function != n.Index.Function {
		keyChanges = append(keyChanges, fmt.Sprintf("index of group %s changes its function from %s to %s", n.Name, o.Index.Function, n.Index.Function))
	}
	for _, m := range keyChanges {
		if data {
			d.refuse(key, hintMoveData, "%s", m)
		} else {
			d.add(ChangeApplied, key, "%s (it names no table)", m)
		}
	}
	before, after := layout(o), layout(n)
	if len(keyChanges) > 0 {
		if !data && before != after {
			d.add(ChangeApplied, "groups."+n.Name+".shards", "shards of group %s change from %s to %s (it names no table)", n.Name, shardList(o), shardList(n))
		}
		return // every key moves anyway; shard by shard says no more
	}
	var moves []shardMove
	listed := true
	switch n.Index.Function {
	case FunctionXXHash:
		moves = d.keyRangeMoves(o, n)
	case FunctionRange:
		moves = d.rangeMoves(o, n)
	case FunctionModulo:
		moves, listed = d.moduloMoves(o, n)
	}
	key = "groups." + n.Name + ".shards"
	switch {
	case !listed && data:
		d.refuse(key, hintMoveData, "group %s changes from %d to %d modulo shards, which moves keys between clusters", n.Name, len(o.Shards), len(n.Shards))
	case before == after:
	case !data:
		d.add(ChangeApplied, key, "shards of group %s change from %s to %s (it names no table)", n.Name, shardList(o), shardList(n))
	case len(moves) == 0:
		d.add(ChangeApplied, key, "shards of group %s change from %s to %s; no key changes database", n.Name, shardList(o), shardList(n))
	}
	if !data {
		return
	}
	for _, m := range moves {
		d.refuseMove(key, n.Name, m)
	}
}

func shardList(g *Group) string {
	parts := make([]string, len(g.Shards))
	for i, s := range g.Shards {
		parts[i] = s.Name + " on " + s.Cluster
	}
	return strings.Join(parts, ", ")
}

// shardMove is a part of a group's keys whose database changes.
type shardMove struct {
	lo, hi   string // the keys as a range, bounds spelled as in shard names
	residues string // or, for modulo, the keys' residues
	from, to *Shard // to is nil when no shard covers the keys any more
	whole    bool   // the keys are all of from and all of to
}

func (m shardMove) keys() string {
	if m.residues != "" {
		return m.residues
	}
	return m.lo + "-" + m.hi
}

func (d *differ) refuseMove(key, group string, m shardMove) {
	switch {
	case m.to == nil:
		d.refuse(key, hintMoveData, "keys %s of group %s are no longer covered by any shard; they live on cluster %s (shard %s)", m.keys(), group, m.from.Cluster, m.from.Name)
	case m.from.Cluster == m.to.Cluster:
		what := fmt.Sprintf("shard %s of group %s moves", m.from.Name, group)
		if !m.whole {
			what = fmt.Sprintf("keys %s of group %s move", m.keys(), group)
		}
		d.refuse(key, hintDSN, "%s to another database: cluster %s now points to %s instead of %s",
			what, m.to.Cluster, clusterLocation(d.new, m.to.Cluster), clusterLocation(d.old, m.from.Cluster))
	case m.whole:
		d.refuse(key, hintMoveData, "shard %s of group %s moves from cluster %s to %s", m.from.Name, group, m.from.Cluster, m.to.Cluster)
	default:
		d.refuse(key, hintMoveData, "keys %s of group %s move from cluster %s (shard %s) to %s (shard %s)", m.keys(), group, m.from.Cluster, m.from.Name, m.to.Cluster, m.to.Name)
	}
}

// moved reports whether keys owned by from in the old topology are looked
// for in another database when to owns them in the new one.
func (d *differ) moved(from, to *Shard) bool {
	if from == nil {
		return false // no shard covered these keys: no row can have them
	}
	return to == nil || clusterLocation(d.old, from.Cluster) != clusterLocation(d.new, to.Cluster)
}

// appendMove adds a move for one segment of the keyspace, merging it into
// the previous one when both go from and to the same shards.
func appendMove(moves []shardMove, from, to *Shard, lo, hi string) []shardMove {
	if k := len(moves) - 1; k >= 0 && moves[k].from == from && moves[k].to == to && moves[k].hi == lo {
		moves[k].hi = hi
	} else {
		moves = append(moves, shardMove{lo: lo, hi: hi, from: from, to: to})
	}
	m := &moves[len(moves)-1]
	m.whole = to != nil && from.Name == to.Name && m.keys() == from.Name
	return moves
}

// keyRangeMoves compares two xxhash layouts segment by segment: the
// segments are cut at every start of a range in either layout.
func (d *differ) keyRangeMoves(o, n *Group) []shardMove {
	var cuts [][]byte
	for _, s := range append(slices.Clone(o.Shards), n.Shards...) {
		if !slices.ContainsFunc(cuts, func(c []byte) bool { return CompareKeys(c, s.Start) == 0 }) {
			cuts = append(cuts, s.Start)
		}
	}
	slices.SortFunc(cuts, CompareKeys)
	owner := func(shards []*Shard, id []byte) *Shard {
		for _, s := range shards {
			if KeyRangeContains(s.Start, s.End, id) {
				return s
			}
		}
		return nil
	}
	hexKey := func(k []byte) string { return fmt.Sprintf("%x", k) }
	var moves []shardMove
	for i, c := range cuts {
		from, to := owner(o.Shards, c), owner(n.Shards, c)
		if !d.moved(from, to) {
			continue
		}
		hi := ""
		if i+1 < len(cuts) {
			hi = hexKey(cuts[i+1])
		}
		moves = appendMove(moves, from, to, hexKey(c), hi)
	}
	return moves
}

// rangeMoves compares two range layouts segment by segment: the segments
// are cut at every bound of either layout.
func (d *differ) rangeMoves(o, n *Group) []shardMove {
	var cuts []int64
	for _, s := range append(slices.Clone(o.Shards), n.Shards...) {
		for _, b := range []*int64{s.From, s.To} {
			if b != nil && !slices.Contains(cuts, *b) {
				cuts = append(cuts, *b)
			}
		}
	}
	slices.Sort(cuts)
	owner := func(shards []*Shard, v int64) *Shard {
		for _, s := range shards {
			if (s.From == nil || *s.From <= v) && (s.To == nil || v < *s.To) {
				return s
			}
		}
		return nil
	}
	type segment struct {
		at     int64  // a key inside the segment
		lo, hi string // its bounds as shard names spell them
	}
	var segs []segment
	if len(cuts) == 0 {
		segs = append(segs, segment{0, "", ""})
	} else if cuts[0] > minInt64 {
		segs = append(segs, segment{minInt64, "", boundText(&cuts[0])})
	}
	for i := range cuts {
		hi := ""
		if i+1 < len(cuts) {
			hi = boundText(&cuts[i+1])
		}
		segs = append(segs, segment{cuts[i], boundText(&cuts[i]), hi})
	}
	var moves []shardMove
	for _, s := range segs {
		from, to := owner(o.Shards, s.at), owner(n.Shards, s.at)
		if d.moved(from, to) {
			moves = appendMove(moves, from, to, s.lo, s.hi)
		}
	}
	return moves
}

const minInt64 = -1 << 63

// maxModuloPeriod bounds the residues compared between two modulo
// layouts; beyond it a change of shard count is refused without detail.
const maxModuloPeriod = 1 << 16

// moduloMoves compares two modulo layouts residue by residue over the
// least common multiple of their shard counts: key mod lcm decides the
// shard in both.
func (d *differ) moduloMoves(o, n *Group) (moves []shardMove, ok bool) {
	no, nn := len(o.Shards), len(n.Shards)
	period := no / gcd(no, nn) * nn
	if period > maxModuloPeriod {
		// Too many residues to list: refuse unless every shard, old and
		// new, is one database.
		loc := clusterLocation(d.old, o.Shards[0].Cluster)
		for _, s := range o.Shards {
			if clusterLocation(d.old, s.Cluster) != loc {
				return nil, false
			}
		}
		for _, s := range n.Shards {
			if clusterLocation(d.new, s.Cluster) != loc {
				return nil, false
			}
		}
		return nil, true
	}
	type pair struct{ from, to *Shard }
	residues := map[pair][]int{}
	var order []pair
	for r := 0; r < period; r++ {
		p := pair{o.Shards[r%no], n.Shards[r%nn]}
		if !d.moved(p.from, p.to) {
			continue
		}
		if _, seen := residues[p]; !seen {
			order = append(order, p)
		}
		residues[p] = append(residues[p], r)
	}
	for _, p := range order {
		if no == nn {
			moves = append(moves, shardMove{from: p.from, to: p.to, whole: true})
			continue
		}
		rs := residues[p]
		text := make([]string, 0, 4)
		for i, r := range rs {
			if i == 3 {
				text = append(text, "...")
				break
			}
			text = append(text, fmt.Sprint(r))
		}
		moves = append(moves, shardMove{residues: fmt.Sprintf("with key mod %d in (%s)", period, strings.Join(text, ", ")), from: p.from, to: p.to})
	}
	return moves, true
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

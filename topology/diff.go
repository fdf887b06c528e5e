package topology

import (
	"fmt"
	"strings"
)

// Reloading a running proxy is only safe when the new file routes every
// existing row to where it already is. The file does not move data: moving
// shard 80- from pg1 to pg0 in the YAML sends customer 42's statements to
// a database that has none of customer 42's rows, and the answers are
// silently wrong (zero orders) rather than an error. Diff compares the
// topology in force with the edited one and classifies each difference:
//
//   - refused: the edit changes where existing rows are looked for (a
//     shard's cluster, the key ranges, the sharding key or function of a
//     group that holds tables, the main group's cluster, a cluster's DSN
//     pointing at another database). The reload is refused as a whole.
//   - applied, provided a table is empty: a table changes group or key
//     column. Diff cannot know whether the table holds rows (a table new
//     to the file resolved to main before, and most often does not exist
//     yet), so the change carries an EmptyCheck that the caller runs
//     against the clusters where the table lived (ReloadPlan.Verify).
//   - applied: everything that does not move rows (new clusters, new
//     groups and tables, secondary-index states, most proxy settings).
//   - needs a restart: valid settings a running proxy cannot change
//     (its listen address, the pool mode, turning TLS on or off).
//
// Where a row lives is decided by location (host, port and database of a
// cluster's DSN), not by cluster name: renaming a cluster, or splitting a
// shard into two that stay on the same cluster, moves nothing and is
// applied.

// ChangeClass says what a reload does with one change.
type ChangeClass int

// Change classes, from harmless to fatal.
const (
	// ChangeApplied takes effect on the running proxy.
	ChangeApplied ChangeClass = iota
	// ChangeRestart is valid but takes effect only when shardgate restarts.
	ChangeRestart
	// ChangeRefused would route statements to shards that do not hold the
	// rows; one refused change refuses the whole reload.
	ChangeRefused
)

// String returns the class as log lines spell it.
func (c ChangeClass) String() string {
	switch c {
	case ChangeApplied:
		return "applied"
	case ChangeRestart:
		return "needs a restart"
	case ChangeRefused:
		return "refused"
	}
	return fmt.Sprintf("ChangeClass(%d)", int(c))
}

// Hints that end the message of a refused change.
const (
	hintMoveData = "moving data between shards is done by a MoveTables/Reshard workflow; this edit would route to shards that do not hold the rows"
	hintDSN      = "this edit would route to a database that does not hold the rows; if the new address serves the same data (a promoted replica, say), restart shardgate with the new file"
)

// Change is one difference between two topologies.
type Change struct {
	Class ChangeClass
	// Key names what changed as a path into the file, such as
	// "clusters.pg1.dsn", "groups.by_customer.shards" or "proxy.pool.size".
	Key string
	// Message says what changed in one line. A refused change's message
	// ends with what to do instead. Messages never include a password.
	Message string
	// Empty is set on an applied change that is only safe when a table
	// holds no rows where it lived; see ReloadPlan.Verify.
	Empty *EmptyCheck
}

// EmptyCheck is the condition of a change that moves a table: it must
// hold no rows on the clusters where it lived, or those rows would no
// longer be read.
type EmptyCheck struct {
	Table QualifiedName
	// Clusters are names in the old topology, one per distinct database.
	Clusters []string
}

// ReloadPlan is every difference between the topology in force and an
// edited one, in a stable order: clusters, groups, tables, secondary
// indexes, sequences, proxy settings.
type ReloadPlan struct {
	Changes []Change
}

// Diff compares the topology in force (old) with an edited one. Both must
// be valid (from Load or Parse). It is pure: it reads no file and touches
// no database; changes that depend on a table being empty carry an
// EmptyCheck for the caller to run (Verify).
func Diff(old, new *Topology) *ReloadPlan {
	d := &differ{old: old, new: new}
	d.clusters()
	d.groups()
	d.tables()
	d.secondaryIndexes()
	d.sequences()
	d.proxy()
	d.decided()
	return &ReloadPlan{Changes: d.changes}
}

// decided applies the changes a routing revision decided: a part that
// either topology has from a revision (Topology.Overrides) changes because
// the revision says so — the workflow or backfill that wrote it moved or
// verified the rows first — so it is applied without the checks of a file
// edit, and its message names the revision.
func (d *differ) decided() {
	for i := range d.changes {
		c := &d.changes[i]
		o := d.new.OverrideOf(c.Key)
		if o == nil {
			o = d.old.OverrideOf(c.Key)
		}
		if o == nil {
			continue
		}
		if bare, ok := d.bare[i]; ok {
			c.Message = bare // without the hint of a refused edit
		}
		c.Class, c.Empty = ChangeApplied, nil
		c.Message += " (routing decided by " + o.Origin + ")"
	}
}

// Refused returns the refused changes.
func (p *ReloadPlan) Refused() []Change {
	var out []Change
	for _, c := range p.Changes {
		if c.Class == ChangeRefused {
			out = append(out, c)
		}
	}
	return out
}

// AppliedKeys returns the keys of the applied changes, each mapped to
// true.
func (p *ReloadPlan) AppliedKeys() map[string]bool {
	keys := map[string]bool{}
	for _, c := range p.Changes {
		if c.Class == ChangeApplied {
			keys[c.Key] = true
		}
	}
	return keys
}

// RestartUnlessLive classifies the applied changes of the proxy: section
// whose key live does not list as needing a restart: a server that reads
// them only at start-up must not claim them applied.
func (p *ReloadPlan) RestartUnlessLive(live map[string]bool) {
	for i := range p.Changes {
		c := &p.Changes[i]
		if c.Class == ChangeApplied && strings.HasPrefix(c.Key, "proxy.") && !live[c.Key] {
			c.Class = ChangeRestart
			c.Message += " (this shardgate reads it only at start-up)"
		}
	}
}

// Verify runs the plan's empty-table checks. hasRows reports whether a
// table holds any row on a cluster of the old topology (false when the
// table does not exist there). A change whose table holds rows becomes
// refused; one whose table is empty stays applied and its message says
// so. An error from hasRows stops Verify and is returned: the caller must
// then refuse the reload, since nothing proves the move is safe.
func (p *ReloadPlan) Verify(hasRows func(cluster string, table QualifiedName) (bool, error)) error {
	for i := range p.Changes {
		c := &p.Changes[i]
		if c.Empty == nil {
			continue
		}
		var full []string
		for _, cl := range c.Empty.Clusters {
			rows, err := hasRows(cl, c.Empty.Table)
			if err != nil {
				return fmt.Errorf("checking whether table %s holds rows on cluster %s: %w", c.Empty.Table, cl, err)
			}
			if rows {
				full = append(full, cl)
			}
		}
		if len(full) > 0 {
			c.Class = ChangeRefused
			c.Message = fmt.Sprintf("%s, and it holds rows on %s: %s", c.Message, clusterList(full), hintMoveData)
		} else {
			c.Message = fmt.Sprintf("%s (it holds no rows on %s)", c.Message, clusterList(c.Empty.Clusters))
		}
		c.Empty = nil
	}
	return nil
}

// Err returns a *RefusedError listing the refused changes, or nil when the
// plan may be applied. A change whose EmptyCheck was not run (Verify was
// not called) counts as refused: nothing proves it safe.
func (p *ReloadPlan) Err() error {
	var refused []Change
	for _, c := range p.Changes {
		switch {
		case c.Class == ChangeRefused:
			refused = append(refused, c)
		case c.Empty != nil:
			c.Class = ChangeRefused
			c.Message += " (not checked for rows)"
			refused = append(refused, c)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return &RefusedError{Changes: refused}
}

// RefusedError refuses a reload: the topology in force stays.
type RefusedError struct {
	Changes []Change // the refused changes
}

// Error lists the refused changes.
func (e *RefusedError) Error() string {
	msgs := make([]string, len(e.Changes))
	for i, c := range e.Changes {
		msgs[i] = c.Message
	}
	return "topology reload refused: " + strings.Join(msgs, "; ")
}

func clusterList(names []string) string {
	if len(names) == 1 {
		return "cluster " + names[0]
	}
	return "clusters " + strings.Join(names, ", ")
}

// differ accumulates the changes between two topologies.
type differ struct {
	old, new *Topology
	changes  []Change
	bare     map[int]string // refused changes' messages without their hint
}

func (d *differ) add(class ChangeClass, key, format string, args ...any) {
	d.changes = append(d.changes, Change{Class: class, Key: key, Message: fmt.Sprintf(format, args...)})
}

func (d *differ) refuse(key, hint, format string, args ...any) {
	if d.bare == nil {
		d.bare = map[int]string{}
	}
	msg := fmt.Sprintf(format, args...)
	d.bare[len(d.changes)] = msg
	d.add(ChangeRefused, key, "%s: %s", msg, hint)
}

package verify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// Checks, in the order a run makes them.
const (
	CheckMisplaced = "misplaced" // rows on a cluster their shard key does not map to
	CheckReference = "reference" // a reference table's copy that differs from the first cluster's
	CheckSequence  = "sequence"  // a sequence whose next value is not past the values it filled
	CheckIndex     = "gsi"       // a global secondary index against its owner table (package gsi)
)

// maxSamples bounds the findings a unit keeps (its counts are exact).
const maxSamples = 20

// Options scope and tune a run.
type Options struct {
	// Group and Table restrict the run to a group's tables (and its
	// indexes) or to one table ("" for all); Table is "name" or
	// "schema.name".
	Group, Table string
	// Repair fixes what is safe to fix (docs/verify.md says what).
	Repair bool
	// Resume continues the last unfinished run of the same scope: the
	// units done are kept, the others go on after their last chunk.
	Resume bool
	// ChunkRows is the rows per chunk (default 10000).
	ChunkRows int
	// Progress is called after each chunk of a unit; nil: nothing.
	Progress func(*Unit)

	// chunkHook runs after each chunk recorded; an error ends the run
	// (tests).
	chunkHook func(*Unit) error
}

// Finding is one thing found wrong.
type Finding struct {
	// Key names what is wrong: a row's primary key, a sequence, an index
	// entry's value.
	Key    string `json:"key"`
	Detail string `json:"detail"`
	// Repaired says the run fixed it; else Detail says why not, when it
	// was asked to repair.
	Repaired bool `json:"repaired"`
}

// Unit is one check of one object (on one cluster): what is recorded in
// main after each chunk.
type Unit struct {
	Name    string `json:"name"`
	Check   string `json:"check"`
	Object  string `json:"object"`
	Cluster string `json:"cluster,omitempty"`
	// Rows counts the rows (entries, for an index) checked.
	Rows     int64     `json:"rows"`
	Found    int64     `json:"found"`
	Repaired int64     `json:"repaired"`
	Samples  []Finding `json:"samples,omitempty"`
	Done     bool      `json:"done"`
	// Position is where the next chunk starts (a block, a primary key).
	Position []string `json:"position,omitempty"`
	Seconds  float64  `json:"seconds"`

	run func(ctx context.Context, v *verifier, u *Unit) error
}

// Left is what the unit found and did not repair.
func (u *Unit) Left() int64 { return u.Found - u.Repaired }

// RowsPerSec is the unit's rate so far.
func (u *Unit) RowsPerSec() float64 {
	if u.Seconds <= 0 {
		return 0
	}
	return float64(u.Rows) / u.Seconds
}

// find records a finding.
func (u *Unit) find(f Finding) {
	u.Found++
	if f.Repaired {
		u.Repaired++
	}
	if len(u.Samples) < maxSamples {
		u.Samples = append(u.Samples, f)
	}
}

// Report is a run's result.
type Report struct {
	Run   int64   `json:"run"`
	Units []*Unit `json:"units"`
	// Routing names the routing the run checked against ("file", or a
	// revision of main's routing state).
	Routing string `json:"routing"`
}

// Left is what the run found and did not repair.
func (r *Report) Left() int64 {
	var n int64
	for _, u := range r.Units {
		n += u.Left()
	}
	return n
}

// verifier is a run's connections and routing.
type verifier struct {
	topo  *topology.Topology // the routing in force
	vs    *vschema.VSchema
	opts  Options
	main  *pgx.Conn
	conns map[string]*pgx.Conn
	store *store
}

// conn is the run's connection to a cluster, opened on first use.
func (v *verifier) conn(ctx context.Context, cluster string) (*pgx.Conn, error) {
	if c := v.conns[cluster]; c != nil {
		return c, nil
	}
	cl := v.topo.Cluster(cluster)
	if cl == nil {
		return nil, sqlerr.New(sqlerr.InternalError, "no cluster %q in the topology", cluster)
	}
	c, err := pgx.Connect(ctx, cl.DSN)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cluster, err)
	}
	v.conns[cluster] = c
	return c, nil
}

func (v *verifier) close() {
	for _, c := range v.conns {
		c.Close(context.Background())
	}
	if v.main != nil {
		// Released here, not by the close: the backend drops a session's
		// advisory locks when its process exits, after the client has
		// gone, so a verify started right after this one returned could
		// still find the lock held (55P03).
		v.main.Exec(context.Background(), "SELECT pg_advisory_unlock_all()")
		v.main.Close(context.Background())
	}
}

func (v *verifier) chunkRows() int {
	if v.opts.ChunkRows > 0 {
		return v.opts.ChunkRows
	}
	return 10000
}

// Run checks the fleet the topology file describes, with main's routing
// state applied over it (the routing the proxies follow): every unit of
// the scope, recorded in main after each chunk. The report lists every
// unit, findings or not; an error stops the run (Resume continues it).
func Run(ctx context.Context, file *topology.Topology, opts Options) (*Report, error) {
	v := &verifier{opts: opts, conns: map[string]*pgx.Conn{}}
	defer v.close()
	var err error
	if v.main, err = pgx.Connect(ctx, file.Cluster(file.Main().Cluster).DSN); err != nil {
		return nil, fmt.Errorf("connect to main: %w", err)
	}
	rev, err := routestate.Load(ctx, v.main)
	if err != nil {
		return nil, err
	}
	eff, err := routestate.Apply(file, rev)
	if err != nil {
		return nil, err
	}
	v.topo, v.vs = eff.Topology, eff.VSchema
	units, err := v.plan()
	if err != nil {
		return nil, err
	}
	if v.store, err = openStore(ctx, v.main, v.scope(), opts.Repair, opts.Resume, units); err != nil {
		return nil, err
	}
	rep := &Report{Run: v.store.run, Units: units, Routing: rev.Origin()}
	runErr := v.runUnits(ctx, units)
	if err := v.store.finish(context.WithoutCancel(ctx), runErr); err != nil && runErr == nil {
		runErr = err
	}
	return rep, runErr
}

func (v *verifier) runUnits(ctx context.Context, units []*Unit) error {
	for _, u := range units {
		if u.Done {
			continue
		}
		if err := u.run(ctx, v, u); err != nil {
			return fmt.Errorf("%s: %w", u.Name, err)
		}
		u.Done = true
		if err := v.store.save(context.WithoutCancel(ctx), u); err != nil {
			return err
		}
		if v.opts.Progress != nil {
			v.opts.Progress(u)
		}
	}
	return nil
}

// chunkDone records a unit's chunk: rows checked in it, taking elapsed,
// and the position after it.
func (v *verifier) chunkDone(ctx context.Context, u *Unit, rows int64, elapsed time.Duration, position []string) error {
	u.Rows += rows
	u.Seconds += elapsed.Seconds()
	u.Position = position
	if err := v.store.save(context.WithoutCancel(ctx), u); err != nil {
		return err
	}
	if v.opts.Progress != nil {
		v.opts.Progress(u)
	}
	if v.opts.chunkHook != nil {
		return v.opts.chunkHook(u)
	}
	return ctx.Err()
}

func (v *verifier) scope() string {
	g, t := v.opts.Group, v.opts.Table
	if g == "" {
		g = "*"
	}
	if t == "" {
		t = "*"
	}
	return "group " + g + ", table " + t
}

// inScope says whether a table of a group is in the run's scope.
func (v *verifier) inScope(t *vschema.Table) bool {
	if v.opts.Group != "" && t.Group.Name != v.opts.Group {
		return false
	}
	return v.opts.Table == "" || v.opts.Table == t.Name || v.opts.Table == t.String()
}

// plan lists the units of the scope: misplaced rows per sharded table and
// cluster, reference copies per table and copy, sequences per table, then
// the indexes.
func (v *verifier) plan() ([]*Unit, error) {
	if v.opts.Group != "" && v.vs.Group(v.opts.Group) == nil {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "group %q is not in the topology", v.opts.Group)
	}
	var tables []*vschema.Table
	for _, t := range v.vs.Tables() {
		if t.LookupOf == nil && v.inScope(t) {
			tables = append(tables, t)
		}
	}
	if v.opts.Table != "" && len(tables) == 0 {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "table %q is not named in the topology", v.opts.Table)
	}
	var units []*Unit
	add := func(check, object, cluster string, run func(context.Context, *verifier, *Unit) error) {
		name := check + " " + object
		if cluster != "" {
			name += " on " + cluster
		}
		units = append(units, &Unit{Name: name, Check: check, Object: object, Cluster: cluster, run: run})
	}
	for _, t := range tables {
		if !t.Sharded() {
			continue
		}
		for _, c := range t.Group.Clusters {
			add(CheckMisplaced, t.String(), c, misplacedRunner(t))
		}
	}
	for _, t := range tables {
		if !t.Reference {
			continue
		}
		for _, c := range t.Group.Clusters[1:] {
			add(CheckReference, t.String(), c, referenceRunner(t))
		}
	}
	for _, t := range tables {
		add(CheckSequence, t.String(), "", sequenceRunner(t))
	}
	for _, si := range v.vs.SecondaryIndexes() {
		if v.inScope(si.Table) {
			add(CheckIndex, si.Name, "", indexRunner(si))
		}
	}
	return units, nil
}

// errNoPK is why a row of a table without a primary key is not repaired.
var errNoPK = errors.New("the table has no primary key: not repaired")

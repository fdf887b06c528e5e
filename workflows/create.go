package workflows

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// Preflight is the outcome of a workflow's checks: what it reads and what
// it would create.
type Preflight struct {
	Plan *Plan
	// Info describes each table as its first source cluster has it.
	Info map[topology.QualifiedName]*tableInfo
	// Missing lists, per table, the target clusters without it: Create
	// makes it there from the source's definition.
	Missing map[topology.QualifiedName][]string
}

// Check runs the pre-flight checks: wal_level=logical and a free
// replication slot and WAL sender on every source, every table present
// with a primary key and a routable shard key, and every target table
// either missing (to be created) or empty with the source's columns.
func Check(ctx context.Context, p *Plan) (*Preflight, error) {
	pf := &Preflight{Plan: p, Info: map[topology.QualifiedName]*tableInfo{}, Missing: map[topology.QualifiedName][]string{}}
	for _, src := range p.Sources {
		if err := checkSource(ctx, pf, src); err != nil {
			return nil, err
		}
	}
	if err := checkMerge(p, func(q topology.QualifiedName) *tableInfo { return pf.Info[q] }); err != nil {
		return nil, err
	}
	for _, tc := range p.Targets {
		if err := checkTarget(ctx, pf, tc); err != nil {
			return nil, err
		}
	}
	return pf, nil
}

func checkSource(ctx context.Context, pf *Preflight, src *Source) error {
	conn, err := pgx.Connect(ctx, src.DSN)
	if err != nil {
		return sqlerr.New(sqlerr.ConnectionFailure, "source cluster %s: %v", src.Cluster, err)
	}
	defer conn.Close(context.Background())
	var wal string
	var freeSlots, freeSenders int
	if err := conn.QueryRow(ctx, `SELECT current_setting('wal_level'),
		current_setting('max_replication_slots')::int - (SELECT count(*) FROM pg_replication_slots),
		current_setting('max_wal_senders')::int - (SELECT count(*) FROM pg_stat_replication)`).Scan(&wal, &freeSlots, &freeSenders); err != nil {
		return fmt.Errorf("source cluster %s: %w", src.Cluster, err)
	}
	if wal != "logical" {
		return refused("source cluster %s has wal_level=%s", src.Cluster, wal).
			WithHint("Set wal_level = logical in its postgresql.conf and restart it.")
	}
	if freeSlots < 1 {
		return sqlerr.New(sqlerr.ConfigurationLimitExceeded, "source cluster %s has no free replication slot", src.Cluster).
			WithHint("Raise max_replication_slots or drop an unused slot (pg_replication_slots).")
	}
	if freeSenders < 1 {
		return sqlerr.New(sqlerr.ConfigurationLimitExceeded, "source cluster %s has no free WAL sender", src.Cluster).
			WithHint("Raise max_wal_senders.")
	}
	for _, t := range src.Tables {
		ti, err := readTable(ctx, conn, t.Name, src.Cluster)
		if err != nil {
			return err
		}
		if err := ti.checkKey(t); err != nil {
			return err
		}
		if _, seen := pf.Info[t.Name]; !seen {
			pf.Info[t.Name] = ti
		}
	}
	return nil
}

func checkTarget(ctx context.Context, pf *Preflight, tc *topology.Cluster) error {
	conn, err := pgx.Connect(ctx, tc.DSN)
	if err != nil {
		return sqlerr.New(sqlerr.ConnectionFailure, "target cluster %s: %v", tc.Name, err)
	}
	defer conn.Close(context.Background())
	for _, t := range pf.Plan.Tables {
		ti := pf.Info[t.Name]
		have, err := readTable(ctx, conn, t.Name, tc.Name)
		if sqlerr.Code(err) == sqlerr.UndefinedTable {
			pf.Missing[t.Name] = append(pf.Missing[t.Name], tc.Name)
			continue
		}
		if err != nil {
			return err
		}
		for _, c := range ti.copyColumns() {
			if _, ok := have.column(c.Name); !ok {
				return sqlerr.New(sqlerr.UndefinedColumn, "table %s in target cluster %s has no column %q", t.Name, tc.Name, c.Name)
			}
		}
		if !slices.Equal(have.PK, ti.PK) {
			return refused("table %s in target cluster %s has primary key (%s), the source (%s)", t.Name, tc.Name,
				strings.Join(have.PK, ", "), strings.Join(ti.PK, ", "))
		}
		var rows bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+qname(t.Name)+")").Scan(&rows); err != nil {
			return err
		}
		if rows {
			return refused("table %s in target cluster %s already has rows", t.Name, tc.Name).
				WithHint("A workflow copies into empty tables; empty it or drop it.")
		}
	}
	return nil
}

// Describe lists what the workflow would create and copy, for --dry-run.
func (pf *Preflight) Describe() string {
	p := pf.Plan
	var b strings.Builder
	fmt.Fprintf(&b, "%s of group %s: %d table(s), %d source cluster(s), %d target cluster(s)\n",
		p.Spec.Kind, p.Spec.Group, len(p.Tables), len(p.Sources), len(p.Targets))
	fmt.Fprintf(&b, "state: schema shardgate on main (%s)\n", p.Main.Name)
	var targets []string
	for _, t := range p.Targets {
		targets = append(targets, t.Name)
	}
	for _, t := range p.Tables {
		for _, c := range pf.Missing[t.Name] {
			fmt.Fprintf(&b, "create on %s: %s\n", c, pf.Info[t.Name].createSQL())
		}
	}
	for _, src := range p.Sources {
		var names []string
		for _, t := range src.Tables {
			names = append(names, qname(t.Name))
		}
		fmt.Fprintf(&b, "create on %s: publication for %s; logical replication slot (pgoutput) with an exported snapshot\n",
			src.Cluster, strings.Join(names, ", "))
	}
	for _, t := range p.Tables {
		ti := pf.Info[t.Name]
		est := "row count not estimated yet"
		if ti.Rows >= 0 {
			est = fmt.Sprintf("about %d rows", ti.Rows)
		}
		how := "each row to the shard of its key (" + strings.Join(t.Route.KeyColumns(), ", ") + ")"
		if !t.Route.Sharded() {
			how = "every row to every target (reference table)"
		}
		fmt.Fprintf(&b, "copy %s from %s to %s: %s, %s, in primary-key chunks of %d\n",
			t.Name, strings.Join(t.Sources, ", "), strings.Join(targets, ", "), est, how, p.chunkRows())
		for _, ix := range ti.Indexes {
			fmt.Fprintf(&b, "after the copy, on %s: %s\n", strings.Join(targets, ", "), ix)
		}
	}
	hold := "for the whole copy"
	if p.Spec.SnapshotMax > 0 {
		hold = fmt.Sprintf("at most %s per copy cycle, the stream catching up between cycles", p.Spec.SnapshotMax)
	}
	fmt.Fprintf(&b, "copy snapshot held %s; %d table(s) of a source copied at once\n", hold, max(p.Spec.CopyParallel, 1))
	b.WriteString("then stream changes from the slots into the targets until switched (workflow switch) or cancelled\n")
	return b.String()
}

// Create checks a spec and records the workflow, creating missing target
// tables; nothing is copied until Run. With dryRun it only checks and
// returns the preflight (id 0).
func Create(ctx context.Context, store *Store, spec Spec, dryRun bool) (int64, *Preflight, error) {
	p, err := NewPlan(spec)
	if err != nil {
		return 0, nil, err
	}
	pf, err := Check(ctx, p)
	if err != nil || dryRun {
		return 0, pf, err
	}
	id, err := store.insert(ctx, p)
	if err != nil {
		return 0, nil, err
	}
	created := map[topology.QualifiedName][]string{}
	for _, tc := range p.Targets {
		conn, err := pgx.Connect(ctx, tc.DSN)
		if err != nil {
			return id, pf, err
		}
		_, err = conn.Exec(ctx, targetSchema)
		for _, t := range p.Tables {
			if err == nil && slices.Contains(pf.Missing[t.Name], tc.Name) {
				if _, err = conn.Exec(ctx, pf.Info[t.Name].createSQL()); err == nil {
					created[t.Name] = append(created[t.Name], tc.Name)
				}
			}
		}
		conn.Close(ctx)
		if err != nil {
			return id, pf, fmt.Errorf("target cluster %s: %w", tc.Name, err)
		}
	}
	for _, t := range p.Tables {
		if err := store.setCreatedOn(ctx, id, t.Sources[0], t.Name.String(), created[t.Name]); err != nil {
			return id, pf, err
		}
	}
	return id, pf, nil
}

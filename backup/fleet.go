package backup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/twopc"
)

// fleet is the topology's clusters, grouped by the Postgres server that
// holds them, with a connection to each cluster.
type fleet struct {
	topo  *topology.Topology
	main  *pgx.Conn // main's cluster: revisions, the decision log, main's point
	conns map[string]*pgx.Conn
	// servers are in the topology's cluster order, main's server last.
	servers []*server
}

// server is one Postgres server (a data directory): the restore point is
// a position in its WAL, shared by every cluster (database) it holds.
type server struct {
	id       string // pg_control_system().system_identifier
	clusters []string
	conn     *pgx.Conn // the first cluster's (main's, for main's server)
	main     bool
	point    Point
}

func openFleet(ctx context.Context, t *topology.Topology, mainConn *pgx.Conn) (*fleet, error) {
	f := &fleet{topo: t, main: mainConn, conns: map[string]*pgx.Conn{}}
	mainName := t.Main().Cluster
	byID := map[string]*server{}
	for _, c := range t.Clusters {
		conn := mainConn
		if c.Name != mainName {
			var err error
			if conn, err = pgx.Connect(ctx, c.DSN); err != nil {
				f.close()
				return nil, fmt.Errorf("restore point refused, nothing held: cluster %s: %w", c.Name, err)
			}
			f.conns[c.Name] = conn
		}
		var id string
		if err := conn.QueryRow(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&id); err != nil {
			f.close()
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		s := byID[id]
		if s == nil {
			s = &server{id: id, conn: conn}
			byID[id] = s
			f.servers = append(f.servers, s)
		}
		s.clusters = append(s.clusters, c.Name)
		if c.Name == mainName {
			s.main, s.conn = true, mainConn
		}
	}
	// Main's server last (its point is written last).
	slices.SortStableFunc(f.servers, func(a, b *server) int {
		switch {
		case a.main == b.main:
			return 0
		case a.main:
			return 1
		}
		return -1
	})
	return f, nil
}

func (f *fleet) close() {
	for _, c := range f.conns {
		c.Close(context.Background())
	}
}

// clusterConn is the connection to a cluster of the topology.
func (f *fleet) clusterConn(name string) *pgx.Conn {
	if c, ok := f.conns[name]; ok {
		return c
	}
	return f.main
}

// preflight checks that every server can be restored to a point: a
// primary, wal_level replica or logical, archive_mode on with an archive
// command or library, and a role that may write restore points and see
// other sessions' transactions. Every problem is listed.
func (f *fleet) preflight(ctx context.Context) error {
	var problems []string
	denied := false
	for _, s := range f.servers {
		var level, mode, command, library string
		var standby, canPoint, seesAll bool
		err := s.conn.QueryRow(ctx, `SELECT current_setting('wal_level'), current_setting('archive_mode'),
			current_setting('archive_command'), coalesce(current_setting('archive_library', true), ''), pg_is_in_recovery(),
			has_function_privilege('pg_create_restore_point(text)', 'EXECUTE'),
			coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false) OR pg_has_role('pg_read_all_stats', 'USAGE')`).
			Scan(&level, &mode, &command, &library, &standby, &canPoint, &seesAll)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name(), err)
		}
		bad := func(format string, args ...any) {
			problems = append(problems, s.name()+": "+fmt.Sprintf(format, args...))
		}
		if standby {
			bad("is a standby (in recovery): the DSN must reach the primary")
		}
		if level != "replica" && level != "logical" {
			bad("wal_level is %s: it must be replica or logical", level)
		}
		switch {
		case mode != "on" && mode != "always":
			bad("archive_mode is %s: WAL is not archived", mode)
		case strings.TrimSpace(command) == "" && library == "":
			bad("archive_mode is on but neither archive_command nor archive_library is set: WAL is not archived")
		}
		if !canPoint {
			bad("the role cannot execute pg_create_restore_point")
			denied = true
		}
		if !seesAll {
			bad("the role cannot see other sessions' transactions (it needs pg_read_all_stats)")
			denied = true
		}
	}
	if len(problems) == 0 {
		return nil
	}
	e := ErrNotReady.WithDetail("%s.", strings.Join(problems, "; ")).
		WithHint("Point-in-time recovery needs wal_level = replica (or logical), archive_mode = on and archive_command on every server (docs/backup.md).")
	if denied {
		c := *e
		c.Code = sqlerr.InsufficientPrivilege
		e = &c
	}
	return e
}

func (s *server) name() string {
	if len(s.clusters) == 1 {
		return "cluster " + s.clusters[0]
	}
	return "clusters " + strings.Join(s.clusters, ", ") + " (one server)"
}

// tables lists every table, view and sequence of every cluster's
// database, outside the system schemas and shardgate's: the gate holds a
// statement that names one of them and may write.
func (f *fleet) tables(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, c := range f.topo.Clusters {
		rows, err := f.clusterConn(c.Name).Query(ctx, `SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind IN ('r', 'p', 'S', 'v', 'm', 'f') AND n.nspname NOT IN ('information_schema', 'shardgate')
				AND n.nspname NOT LIKE 'pg\_%'`)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// resolve runs one pass of the two-phase commit resolver over the
// topology, as every proxy does at start-up and every 30 s: decided
// transactions are finished, the decision log is created if need be.
func (f *fleet) resolve(ctx context.Context) error {
	dsns := map[string]string{}
	for _, c := range f.topo.Clusters {
		dsns[c.Name] = c.DSN
	}
	r := twopc.NewResolver(twopc.Config{Clusters: func() (string, map[string]string) { return f.topo.Main().Cluster, dsns }})
	_, err := r.Resolve(ctx)
	return err
}

// each runs fn on every server at once (main's too unless skipMain) and
// joins the errors, each named after its server.
func (f *fleet) each(skipMain bool, fn func(s *server) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(f.servers))
	for i, s := range f.servers {
		if skipMain && s.main {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(s); err != nil {
				errs[i] = fmt.Errorf("%s: %w", s.name(), err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// switchWAL makes every server start a new WAL file, so the one holding
// the point is archived now.
func (f *fleet) switchWAL(ctx context.Context) error {
	return f.each(false, func(s *server) error {
		_, err := s.conn.Exec(ctx, `SELECT pg_switch_wal()`)
		return err
	})
}

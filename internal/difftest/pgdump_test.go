package difftest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/internal/testenv"
)

// dumpedTables are the tables the pg_dump reload writes: every table of
// the proxy's groups (sharded members, reference tables, the GSI owner)
// and one of main.
var dumpedTables = []string{"countries", "currencies", "customers", "orders", "items", "events", "tickets", "products", "settings"}

// dumpFormats are pg_dump's ways of writing rows as INSERT statements.
var dumpFormats = [][]string{
	{"--inserts"},            // INSERT INTO public.t VALUES (...); one row each, no column list
	{"--rows-per-insert=50"}, // the same, 50 rows a statement
	{"--column-inserts"},     // INSERT INTO public.t (a, b) VALUES (...);
	{"--inserts", "--on-conflict-do-nothing"},
}

// pgDumpReload dumps the oracle's rows with pg_dump in each INSERT format,
// loads the dump with psql over emptied tables through the proxy and into
// the oracle, and compares every table's rows, row by row. Both sides load
// the dump, not only the proxy: a restore is not always the identity
// (pg_dump writes the float -0 as the bare -0, which Postgres reads as
// the integer 0). It runs after every query, so what it writes changes no
// other step's answer.
func (s *session) pgDumpReload(t *testing.T) {
	bin, err := testenv.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, table := range dumpedTables {
		if len(tableRows(t, s.oracle.PgConn(), table)) == 0 && table != "settings" {
			t.Fatalf("the oracle's %s is empty: the reload would test nothing", table)
		}
	}
	for _, format := range dumpFormats {
		t.Run(strings.TrimPrefix(strings.Join(format, ","), "--"), func(t *testing.T) {
			args := append([]string{"--data-only", "--no-owner", "--no-privileges", "-d", s.oracleDSN}, format...)
			for _, table := range dumpedTables {
				args = append(args, "-t", "public."+table)
			}
			dump, err := exec.CommandContext(ctx, filepath.Join(bin, "pg_dump"), args...).Output()
			if err != nil {
				t.Fatalf("pg_dump %v: %v", format, err)
			}
			// psql loads it, as a user restores a dump: in one
			// transaction, over tables emptied first.
			var script strings.Builder
			for _, table := range slices.Backward(dumpedTables) {
				script.WriteString("DELETE FROM public." + table + ";\n")
			}
			script.Write(dump)
			file := filepath.Join(t.TempDir(), "dump.sql")
			if err := os.WriteFile(file, []byte(script.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, dsn := range []string{s.oracleDSN, s.proxyDSN} {
				psql := exec.CommandContext(ctx, filepath.Join(bin, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction", "-d", dsn, "-f", file)
				if out, err := psql.CombinedOutput(); err != nil {
					t.Fatalf("psql -f (pg_dump %v) on %s: %v\n%s", format, dsn, err, out)
				}
			}
			pc := s.proxy.PgConn()
			for _, table := range dumpedTables {
				got, want := tableRows(t, pc, table), tableRows(t, s.oracle.PgConn(), table)
				if !slices.Equal(got, want) {
					t.Errorf("%s after the reload: %d rows, the oracle %d; first difference: %s", table, len(got), len(want), firstDifference(got, want))
				}
			}
		})
	}
}

// tableRows reads every row of public.table as text, one string per row,
// sorted.
func tableRows(t *testing.T, c *pgconn.PgConn, table string) []string {
	t.Helper()
	res, err := c.Exec(context.Background(), "SELECT * FROM public."+table).ReadAll()
	if err != nil {
		t.Fatalf("SELECT * FROM %s: %v", table, err)
	}
	var rows []string
	for _, r := range res {
		for _, row := range r.Rows {
			var b strings.Builder
			for i, v := range row {
				if i > 0 {
					b.WriteString(" | ")
				}
				if v == nil {
					b.WriteString("NULL")
				} else {
					b.WriteString(strings.ReplaceAll(string(v), "|", `\|`))
				}
			}
			rows = append(rows, b.String())
		}
	}
	slices.Sort(rows)
	return rows
}

// firstDifference names the first row of one sorted list the other lacks.
func firstDifference(got, want []string) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			return "missing " + want[i]
		case i >= len(want):
			return "extra " + got[i]
		case got[i] != want[i]:
			return "got " + got[i] + ", want " + want[i]
		}
	}
	return "none"
}

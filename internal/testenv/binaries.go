package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// ErrNoBinaries is returned (wrapped) by FindBinaries and Start when the
// PostgreSQL server binaries cannot be found. Its text says how to install them.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found; " +
	"on Debian/Ubuntu: apt-get install postgresql; on macOS: brew install postgresql@15; " +
	"or put their directory on PATH")

// BinDirEnv names an environment variable that, when set, overrides the
// search: it must name a directory holding initdb, pg_ctl and postgres.
const BinDirEnv = "SHARDGATE_PG_BINDIR"

// serverBinaries must all be present in a directory for it to be usable.
var serverBinaries = []string{"initdb", "pg_ctl", "postgres"}

// FindBinaries returns the directory holding the PostgreSQL server binaries
// (initdb, pg_ctl, postgres). It tries, in order:
//
//  1. $SHARDGATE_PG_BINDIR, if set (and then nothing else);
//  2. `pg_config --bindir`, but only if that directory really holds the
//     server binaries (on Debian pg_config may point at the client-only /usr/bin);
//  3. the highest version among /usr/lib/postgresql/*/bin;
//  4. the directory of initdb found on $PATH.
//
// When none fits, the error wraps ErrNoBinaries, whose text says how to install them.
func FindBinaries() (dir string, err error) {
	if d := os.Getenv(BinDirEnv); d != "" {
		if hasServerBinaries(d) {
			return d, nil
		}
		return "", fmt.Errorf("%s=%q does not hold initdb, pg_ctl and postgres: %w", BinDirEnv, d, ErrNoBinaries)
	}
	return findBinaries(exec.LookPath, "/usr/lib/postgresql")
}

// findBinaries is FindBinaries with its environment injected, for tests.
func findBinaries(lookPath func(string) (string, error), libRoot string) (string, error) {
	if pgConfig, err := lookPath("pg_config"); err == nil {
		if out, err := exec.Command(pgConfig, "--bindir").Output(); err == nil {
			if d := strings.TrimSpace(string(out)); d != "" && hasServerBinaries(d) {
				return d, nil
			}
		}
	}
	if libRoot != "" {
		dirs, _ := filepath.Glob(filepath.Join(libRoot, "*", "bin"))
		sort.Slice(dirs, func(i, j int) bool {
			return versionLess(filepath.Base(filepath.Dir(dirs[j])), filepath.Base(filepath.Dir(dirs[i])))
		})
		for _, d := range dirs {
			if hasServerBinaries(d) {
				return d, nil
			}
		}
	}
	if initdb, err := lookPath("initdb"); err == nil {
		if d := filepath.Dir(initdb); hasServerBinaries(d) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func hasServerBinaries(dir string) bool {
	for _, b := range serverBinaries {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionLess orders PostgreSQL version directory names ("9.6" < "15" < "16").
// Names that are not versions sort first.
func versionLess(a, b string) bool {
	pa, pb := parseVersion(a), parseVersion(b)
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			return x < y
		}
	}
	return a < b
}

func parseVersion(s string) []int {
	var out []int
	for _, p := range strings.Split(s, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			return []int{-1}
		}
		out = append(out, n)
	}
	return out
}

// Pgbench returns the path of pgbench: next to the server binaries, else
// on $PATH. A missing pgbench fails the test rather than skipping it
// (Debian's postgresql package ships it).
func Pgbench(tb testing.TB) string {
	tb.Helper()
	dir, err := FindBinaries()
	if err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(dir, "pgbench")
	if _, err := os.Stat(p); err != nil {
		if p, err = exec.LookPath("pgbench"); err != nil {
			tb.Fatalf("pgbench not found next to %s or on PATH (apt-get install postgresql)", dir)
		}
	}
	return p
}

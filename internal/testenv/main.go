package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// SkipEnv names the environment variable that, set to "1", makes tests that
// need PostgreSQL skip instead of starting clusters. Without it, missing
// server binaries FAIL the tests, with instructions to install them.
const SkipEnv = "SHARDGATE_SKIP_PG"

// StartTimeout bounds Start in Run and ForTest.
const StartTimeout = 3 * time.Minute

var (
	sharedMu      sync.Mutex
	shared        *Env
	sharedSkipped bool
)

func skipRequested() bool { return os.Getenv(SkipEnv) == "1" }

// Run is a TestMain helper that gives every test of a package the same
// clusters. It starts them once, calls setup (to keep a pointer, load a
// schema, ...), runs the tests, stops the clusters and exits with the tests'
// status:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) {
//		testenv.Run(m, testenv.Options{N: 3, Databases: []string{"shop"}}, func(e *testenv.Env) error {
//			env = e
//			return nil
//		})
//	}
//
// Tests may also get the clusters with Shared(t). If the clusters cannot be
// started (binaries missing included) the run fails with the reason; with
// SHARDGATE_SKIP_PG=1 no cluster is started, setup is not called, and
// Shared skips the tests that ask for clusters. On SIGINT/SIGTERM the
// clusters are stopped before the process exits.
func Run(m *testing.M, opts Options, setup func(*Env) error) {
	os.Exit(run(m, opts, setup))
}

func run(m *testing.M, opts Options, setup func(*Env) error) int {
	if skipRequested() {
		sharedMu.Lock()
		sharedSkipped = true
		sharedMu.Unlock()
		fmt.Fprintf(os.Stderr, "testenv: %s=1: not starting PostgreSQL; tests that need it are skipped\n", SkipEnv)
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	env, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: cannot start PostgreSQL for the tests: %v\n", err)
		if errors.Is(err, ErrNoBinaries) {
			fmt.Fprintf(os.Stderr, "testenv: (set %s=1 to skip the tests that need PostgreSQL)\n", SkipEnv)
		}
		return 1
	}
	release := env.StopOnSignal()
	defer release()
	defer env.Stop()
	if setup != nil {
		if err := setup(env); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: setup: %v\n", err)
			return 1
		}
	}
	sharedMu.Lock()
	shared = env
	sharedMu.Unlock()
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Shared returns the clusters started by Run for this test binary. It skips
// the test when SHARDGATE_SKIP_PG=1 and fails it when Run was not used.
func Shared(tb testing.TB) *Env {
	tb.Helper()
	sharedMu.Lock()
	env, skipped := shared, sharedSkipped
	sharedMu.Unlock()
	switch {
	case skipped:
		tb.Skipf("%s=1: skipping a test that needs PostgreSQL", SkipEnv)
	case env == nil:
		tb.Fatal("testenv.Shared: no shared clusters; call testenv.Run from TestMain")
	}
	return env
}

// ForTest starts clusters for one test and stops them (removing a temporary
// BaseDir) when the test and its subtests end, pass or fail. It skips the
// test when SHARDGATE_SKIP_PG=1 and fails it when the clusters cannot start
// (binaries missing included). Unless opts.Log is set, progress goes to t.Log.
func ForTest(tb testing.TB, opts Options) *Env {
	tb.Helper()
	if skipRequested() {
		tb.Skipf("%s=1: skipping a test that needs PostgreSQL", SkipEnv)
	}
	if opts.Log == nil {
		opts.Log = tbWriter{tb}
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	env, err := Start(ctx, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := env.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return env
}

// tbWriter sends progress lines to a test's log.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	s := string(p)
	if n := len(s); n > 0 && s[n-1] == '\n' {
		s = s[:n-1]
	}
	w.tb.Log(s)
	return len(p), nil
}

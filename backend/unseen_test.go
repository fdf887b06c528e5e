package backend

import (
	"context"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// A connection that ran unseen code (SettingsUnseen) and comes back
// unchecked has its settings reset on Release: the next borrower, which
// may be another client or the proxy itself, never runs with them.
func TestReleaseResetsUnseenSettings(t *testing.T) {
	p, b := poolOfOne(t)
	if err := b.SimpleExec("DO $$BEGIN PERFORM set_config('search_path', 'pg_catalog', false); END$$", nil); err != nil {
		t.Fatal(err)
	}
	b.SettingsKey = "settings;"
	b.SettingsUnseen = true
	b.Release()
	b, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	rows, err := b.Query("SELECT current_setting('search_path')")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(rows[0][0]); got != `"$user", public` {
		t.Fatalf("search_path set by unseen code reached the next borrower: %s", got)
	}
	if b.SettingsKey != "" || b.SettingsUnseen {
		t.Fatalf("after the reset the connection's settings are unknown: key %q, unseen %v", b.SettingsKey, b.SettingsUnseen)
	}
}

// poolOfOne is a pool of one connection to the test cluster, closed when
// the test ends, and its connection, acquired.
func poolOfOne(t *testing.T) (*Pool, *Conn) {
	t.Helper()
	env := testenv.Shared(t)
	p := NewPool("pg0", env.Clusters[0].DSN(""), 1, 5*time.Second, 5*time.Second, 0)
	t.Cleanup(p.Close)
	b, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

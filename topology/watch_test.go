package topology

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const watchV1 = `version: 1
clusters: { pg0: { dsn: "postgres://h/db" } }
groups: { main: { unsharded: true, cluster: pg0 } }
`

// watchEvents collects callbacks on channels.
type watchEvents struct {
	changes chan *Topology
	errs    chan error
}

func newWatchEvents() *watchEvents {
	return &watchEvents{changes: make(chan *Topology, 10), errs: make(chan error, 10)}
}

func (e *watchEvents) change(t *testing.T) *Topology {
	t.Helper()
	select {
	case topo := <-e.changes:
		return topo
	case err := <-e.errs:
		t.Fatalf("onError(%v), want onChange", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no onChange within 5s")
	}
	return nil
}

func (e *watchEvents) err(t *testing.T) error {
	t.Helper()
	select {
	case topo := <-e.changes:
		t.Fatalf("onChange(%v), want onError", topo)
	case err := <-e.errs:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("no onError within 5s")
	}
	return nil
}

func (e *watchEvents) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case topo := <-e.changes:
		t.Fatalf("unexpected onChange(%v)", topo)
	case err := <-e.errs:
		t.Fatalf("unexpected onError(%v)", err)
	case <-time.After(d):
	}
}

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "topology.yaml")
	if err := os.WriteFile(path, []byte(watchV1), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := newWatchEvents()
	w, err := Watch(ctx, path, func(t *Topology) { ev.changes <- t }, func(err error) { ev.errs <- err })
	if err != nil {
		t.Fatal(err)
	}
	if topo := ev.change(t); topo.Cluster("pg0") == nil {
		t.Fatalf("initial topology = %+v", topo)
	}

	// An in-place write.
	v2 := strings.Replace(watchV1, "pg0", "pgA", 2)
	if err := os.WriteFile(path, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	if topo := ev.change(t); topo.Cluster("pgA") == nil {
		t.Fatalf("after write: %+v", topo.Clusters)
	}

	// An invalid edit is reported and changes nothing.
	if err := os.WriteFile(path, []byte("version: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ve *ValidationError
	if err := ev.err(t); !errors.As(err, &ve) {
		t.Fatalf("onError(%v), want a *ValidationError", err)
	}

	// An editor-style replace: write a temporary file, rename it over.
	v3 := strings.Replace(watchV1, "pg0", "pgB", 2)
	tmp := filepath.Join(dir, ".topology.yaml.swp")
	if err := os.WriteFile(tmp, []byte(v3), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if topo := ev.change(t); topo.Cluster("pgB") == nil {
		t.Fatalf("after rename: %+v", topo.Clusters)
	}

	// Touching the file without changing it is not a change...
	now := time.Now()
	if err := os.Chtimes(path, now, now); err != nil {
		t.Fatal(err)
	}
	ev.quiet(t, 4*debounce)

	// ...but an explicit reload (SIGHUP) is.
	w.Reload()
	if topo := ev.change(t); topo.Cluster("pgB") == nil {
		t.Fatalf("after Reload: %+v", topo.Clusters)
	}

	cancel()
	select {
	case <-w.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("watcher did not stop")
	}
}

func TestWatchRefusesInvalidStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(path, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	called := false
	_, err := Watch(context.Background(), path, func(*Topology) { called = true }, func(error) { called = true })
	var ve *ValidationError
	if !errors.As(err, &ve) || called {
		t.Fatalf("Watch = %v (callbacks called: %v), want a *ValidationError and no callback", err, called)
	}
}

// A broken file is reported once, however many events the directory sees
// (a log written next to it re-reads the file every debounce); a new
// failure is reported again, and so is the same one after an explicit
// reload.
func TestWatchReportsAFailureOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "topology.yaml")
	if err := os.WriteFile(path, []byte(watchV1), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := newWatchEvents()
	w, err := Watch(ctx, path, func(t *Topology) { ev.changes <- t }, func(err error) { ev.errs <- err })
	if err != nil {
		t.Fatal(err)
	}
	ev.change(t)
	if err := os.WriteFile(path, []byte("version: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev.err(t)
	for i := 0; i < 8; i++ { // a neighbour written every 2 debounces
		if err := os.WriteFile(filepath.Join(dir, "shardgate.log"), []byte(strings.Repeat("x", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * debounce)
	}
	ev.quiet(t, 2*debounce)
	if err := os.WriteFile(path, []byte("version: 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ev.err(t); !strings.Contains(err.Error(), "version 8") {
		t.Fatalf("the new failure: %v", err)
	}
	w.Reload()
	ev.err(t)
	if err := os.WriteFile(path, []byte(strings.Replace(watchV1, "pg0", "pgA", 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	ev.change(t)
}

package topology

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// debounce is how long Watch waits after the last file-system event before
// reloading: an editor saving a file produces a burst of events (write a
// temporary file, rename it over the original, chmod), and the file is
// read once, after the burst.
const debounce = 100 * time.Millisecond

// Watcher reloads a topology file when it changes. Create one with Watch.
type Watcher struct {
	path     string
	onChange func(*Topology)
	onError  func(error)
	reload   chan struct{}
	done     chan struct{}
	last     []byte // contents of the topology last handed to onChange
	// failed is the last failure reported (the contents of an invalid
	// file, or an unreadable file's error): any event in the directory
	// re-reads the file — a log written next to it, an editor's swap
	// file — and the same failure is reported once, not on every event.
	failedData []byte
	failedErr  string
}

// Watch loads the topology file at path, hands it to onChange, and then
// watches the file until ctx is cancelled, calling onChange with each new
// valid version and onError for each failure (an unreadable file, or a
// *ValidationError for an invalid edit, which is then ignored: the last
// good topology stays in force).
//
// If the initial load fails, Watch returns the error and watches nothing.
// The first onChange call happens before Watch returns; later calls, and
// all onError calls, come from the watcher's goroutine, one at a time and
// in order, so the callbacks need no locking of their own.
//
// Watch observes the file's directory rather than the file, because
// editors and configuration managers replace a file (write a new one and
// rename it over the old, or swap a symlink, as Kubernetes ConfigMaps do)
// and a watch on the old file would go quiet. Any event in the directory
// schedules a reload after a short debounce; a reload whose bytes equal
// the current topology's is dropped silently, and so is one that fails the
// way the last one did (onError is called once per distinct failure;
// an explicit Reload reports it again).
func Watch(ctx context.Context, path string, onChange func(*Topology), onError func(error)) (*Watcher, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	if err := fw.Add(filepath.Dir(path)); err != nil {
		fw.Close()
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	w := &Watcher{
		path:     path,
		onChange: onChange,
		onError:  onError,
		reload:   make(chan struct{}, 1),
		done:     make(chan struct{}),
		last:     data,
	}
	onChange(t)
	go w.run(ctx, fw)
	return w, nil
}

// Reload asks the watcher to re-read the file now, as on SIGHUP. Unlike a
// file-system event, an explicit reload calls onChange even when the file
// is unchanged, so an operator always sees it take effect. It never
// blocks; requests made while one is pending are merged.
func (w *Watcher) Reload() {
	select {
	case w.reload <- struct{}{}:
	default:
	}
}

// Done is closed when the watcher has stopped, after ctx is cancelled.
// No callback runs after Done is closed.
func (w *Watcher) Done() <-chan struct{} { return w.done }

func (w *Watcher) run(ctx context.Context, fw *fsnotify.Watcher) {
	defer close(w.done)
	defer fw.Close()
	timer := time.NewTimer(debounce)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case _, ok := <-fw.Events:
			if !ok {
				return
			}
			timer.Reset(debounce)
		case err, ok := <-fw.Errors:
			if !ok {
				return
			}
			w.onError(fmt.Errorf("watch %s: %w", w.path, err))
		case <-w.reload:
			w.load(true)
		case <-timer.C:
			w.load(false)
		}
	}
}

// load re-reads the file and hands a valid, changed topology to onChange.
func (w *Watcher) load(force bool) {
	data, err := os.ReadFile(w.path)
	if err != nil {
		if force || w.failedData != nil || err.Error() != w.failedErr {
			w.failedData, w.failedErr = nil, err.Error()
			w.onError(err)
		}
		return
	}
	if !force && bytes.Equal(data, w.last) {
		w.failedData, w.failedErr = nil, "" // back to the topology in force
		return
	}
	if !force && w.failedData != nil && bytes.Equal(data, w.failedData) {
		return
	}
	t, err := Parse(w.path, data)
	if err != nil {
		w.failedData, w.failedErr = data, err.Error()
		w.onError(err)
		return
	}
	w.failedData, w.failedErr = nil, ""
	w.last = data
	w.onChange(t)
}

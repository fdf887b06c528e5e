package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// A pgbench load that outlives connection errors. pgbench 15 aborts a
// client whose connection fails (and ends with status 2 once no client
// is left); a lane is one single-client pgbench started again, with its
// run number one higher, whenever it ends before the load's end. Each
// run writes pgbench's per-transaction log (-l), the record of what the
// server acknowledged; each run that ends in an error is kept with
// pgbench's messages.

// LanesOptions says what StartLanes runs.
type LanesOptions struct {
	// Pgbench is the pgbench binary (Pgbench finds it in tests).
	Pgbench string
	// Dir holds the script and the logs.
	Dir string
	// Script is the pgbench script. pgbench sets the variables lane and
	// run (-D), and n to 0 at each run's start: a script whose first
	// line is `\set n :n + 1` numbers its transactions 1, 2, ... as
	// LaneTxn.N does (pgbench keeps a client's variables from one
	// transaction to the next).
	Script string
	// DSNs are where lanes connect: lane i to DSNs[i % len(DSNs)].
	DSNs []string
	// Lanes is how many pgbench run side by side.
	Lanes int
	// Duration is how long the load lasts: a run started later gets the
	// seconds left (-T, at least 1).
	Duration time.Duration
	// Env is added to pgbench's environment (PGOPTIONS=...).
	Env []string
	// Args are more pgbench arguments (-M prepared).
	Args []string
}

// LaneTxn is one acknowledged transaction of a lane's run.
type LaneTxn struct {
	Lane, Run int
	// N is the transaction's number in its run, from 1 (the log's
	// transaction_no).
	N          int64
	Start, End time.Time
}

// LaneError is a run of a lane that ended in an error.
type LaneError struct {
	Lane, Run int
	// Started is when the run's pgbench started, Ended when it exited.
	Started, Ended time.Time
	// LastAck is the end of the run's last acknowledged transaction
	// (zero: none).
	LastAck time.Time
	// Message is pgbench's error output.
	Message string
}

// BeganBefore reports whether the transaction that failed began before
// t: the run's last acknowledged transaction (or, without one, the run)
// began by then. A run that failed to connect began no transaction.
func (e LaneError) BeganBefore(t time.Time) bool {
	if e.LastAck.IsZero() {
		return e.Started.Before(t) && !strings.Contains(e.Message, "connection to server")
	}
	return e.LastAck.Before(t)
}

// LanesResult is what a load's lanes saw.
type LanesResult struct {
	Txns   []LaneTxn
	Errors []LaneError
	// Runs is how many pgbench processes ran.
	Runs int
}

// Lanes is a running load.
type Lanes struct {
	opts   LanesOptions
	end    time.Time
	wg     sync.WaitGroup
	mu     sync.Mutex
	res    LanesResult
	errs   []error
	cancel context.CancelFunc
}

// StartLanes writes the script and starts the lanes.
func StartLanes(ctx context.Context, opts LanesOptions) (*Lanes, error) {
	if opts.Lanes <= 0 || len(opts.DSNs) == 0 || opts.Duration <= 0 {
		return nil, errors.New("testenv: StartLanes needs lanes, DSNs and a duration")
	}
	script := filepath.Join(opts.Dir, "lanes.sql")
	if err := os.WriteFile(script, []byte(opts.Script), 0o644); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Lanes{opts: opts, end: time.Now().Add(opts.Duration), cancel: cancel}
	for lane := 0; lane < opts.Lanes; lane++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.runLane(ctx, lane, script)
		}()
	}
	return l, nil
}

// End is when the load ends.
func (l *Lanes) End() time.Time { return l.end }

// Wait waits for every lane to end and returns what they saw.
func (l *Lanes) Wait() (LanesResult, error) {
	l.wg.Wait()
	l.cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.res, errors.Join(l.errs...)
}

// runLane runs pgbench again and again until the load's end.
func (l *Lanes) runLane(ctx context.Context, lane int, script string) {
	for run := 1; ctx.Err() == nil; run++ {
		left := time.Until(l.end)
		if left < time.Second && run > 1 {
			return
		}
		secs := max(1, int((left+time.Second-1)/time.Second))
		txns, lerr, err := l.runOnce(ctx, lane, run, script, secs)
		l.mu.Lock()
		l.res.Runs++
		l.res.Txns = append(l.res.Txns, txns...)
		if lerr != nil {
			l.res.Errors = append(l.res.Errors, *lerr)
		}
		if err != nil {
			l.errs = append(l.errs, err)
		}
		l.mu.Unlock()
		if err != nil {
			return
		}
		if lerr != nil {
			// A proxy refusing connections would otherwise make this
			// loop spin.
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// runOnce runs one pgbench of lane and reads its log.
func (l *Lanes) runOnce(ctx context.Context, lane, run int, script string, secs int) ([]LaneTxn, *LaneError, error) {
	prefix := filepath.Join(l.opts.Dir, fmt.Sprintf("lane%d.run%d", lane, run))
	args := append([]string{"-n", "-c", "1", "-j", "1", "-T", strconv.Itoa(secs), "-l", "--log-prefix", prefix,
		"-D", "lane=" + strconv.Itoa(lane), "-D", "run=" + strconv.Itoa(run), "-D", "n=0", "-f", script}, l.opts.Args...)
	args = append(args, l.opts.DSNs[lane%len(l.opts.DSNs)])
	cmd := exec.CommandContext(ctx, l.opts.Pgbench, args...)
	cmd.Env = append(childEnv(), l.opts.Env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	started := time.Now()
	runErr := cmd.Run()
	ended := time.Now()
	txns, err := readLaneLog(prefix, lane, run)
	if err != nil {
		return nil, nil, err
	}
	if runErr == nil {
		return txns, nil, nil
	}
	if ctx.Err() != nil {
		return txns, nil, nil
	}
	var exit *exec.ExitError
	if !errors.As(runErr, &exit) {
		return txns, nil, fmt.Errorf("testenv: pgbench: %w", runErr)
	}
	le := &LaneError{Lane: lane, Run: run, Started: started, Ended: ended, Message: errorLines(out.String())}
	if len(txns) > 0 {
		le.LastAck = txns[len(txns)-1].End
	}
	return txns, le, nil
}

// errorLines are pgbench's lines that report an error.
func errorLines(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "error") || strings.Contains(line, "aborted") || strings.Contains(line, "FATAL") || strings.Contains(line, "ERROR") {
			keep = append(keep, strings.TrimSpace(line))
		}
	}
	return strings.Join(keep, "; ")
}

// readLaneLog reads a run's per-transaction log (prefix.PID; fields
// client_id transaction_no (from 1) time script_no time_epoch time_us: time is
// the latency in microseconds, or "failed"/"skipped", time_epoch and
// time_us when the transaction ended). A run that never connected has
// none.
func readLaneLog(prefix string, lane, run int) ([]LaneTxn, error) {
	files, err := filepath.Glob(prefix + ".*")
	if err != nil {
		return nil, err
	}
	var out []LaneTxn
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if t, ok := parseLaneLine(sc.Text()); ok {
				t.Lane, t.Run = lane, run
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// parseLaneLine reads one acknowledged transaction of a log line.
func parseLaneLine(line string) (LaneTxn, bool) {
	f := strings.Fields(line)
	if len(f) < 6 {
		return LaneTxn{}, false
	}
	no, err0 := strconv.ParseInt(f[1], 10, 64)
	lat, err1 := strconv.ParseInt(f[2], 10, 64) // not a number: failed, skipped
	sec, err2 := strconv.ParseInt(f[4], 10, 64)
	us, err3 := strconv.ParseInt(f[5], 10, 64)
	if err0 != nil || err1 != nil || err2 != nil || err3 != nil {
		return LaneTxn{}, false
	}
	end := time.Unix(sec, us*1000)
	return LaneTxn{N: no, Start: end.Add(-time.Duration(lat) * time.Microsecond), End: end}, true
}

// LanesCheck is where the rows of a load's acknowledged transactions
// are: each must be on exactly one of the places looked at.
type LanesCheck struct {
	Acked int
	// Lost are on none, Dup on more than one (or twice on one).
	Lost, Dup int
	// On is, for each id found, the index of the DSN it was found on.
	On map[int64]int
}

// FindAcked looks the row of every acknowledged transaction up, by the
// id id gives it, in the id column of table on each of dsns (straight
// on the servers, not through a proxy).
func FindAcked(ctx context.Context, res LanesResult, id func(LaneTxn) int64, table string, dsns ...string) (LanesCheck, error) {
	ids := make([]int64, 0, len(res.Txns))
	for _, tx := range res.Txns {
		ids = append(ids, id(tx))
	}
	c := LanesCheck{Acked: len(ids), On: map[int64]int{}}
	seen := make(map[int64]int, len(ids))
	for i, dsn := range dsns {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return c, fmt.Errorf("testenv: %w", err)
		}
		rows, err := conn.Query(ctx, "SELECT id FROM "+table+" WHERE id = ANY($1)", ids)
		if err == nil {
			var v int64
			_, err = pgx.ForEachRow(rows, []any{&v}, func() error {
				seen[v]++
				c.On[v] = i
				return nil
			})
		}
		conn.Close(ctx)
		if err != nil {
			return c, fmt.Errorf("testenv: %s: %w", table, err)
		}
	}
	for _, v := range ids {
		switch seen[v] {
		case 0:
			c.Lost++
		case 1:
		default:
			c.Dup++
		}
	}
	return c, nil
}

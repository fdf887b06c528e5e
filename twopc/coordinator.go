package twopc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
)

// Coordinator ends transactions that wrote on several clusters with
// two-phase commit. It is safe for concurrent use; Close stops its
// background work.
type Coordinator struct {
	cfg   Config
	id    string
	seq   atomic.Uint64
	hooks hookSet

	schemaMu   sync.Mutex
	schemaDone map[string]bool // main DSNs whose decision log is up to date

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	bgMu   sync.Mutex // orders starting background work with Close
	closed bool
	wg     sync.WaitGroup

	forgetOnce sync.Once
	forget     chan string // gids whose commit row can go
}

// NewCoordinator returns a coordinator.
func NewCoordinator(cfg Config) *Coordinator {
	cfg = cfg.withDefaults()
	id := cfg.ProxyID
	if id == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		id = hex.EncodeToString(b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Coordinator{
		cfg: cfg, id: id, schemaDone: map[string]bool{},
		ctx: ctx, cancel: cancel, forget: make(chan string, 4096),
	}
}

// SetHooks installs test failpoints.
func (c *Coordinator) SetHooks(h Hooks) { c.hooks.set(h) }

// Close stops background retries and forgetting. Decisions they leave are
// finished and removed by the resolver.
func (c *Coordinator) Close() {
	c.bgMu.Lock()
	c.closed = true
	c.bgMu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// background runs f in a goroutine that Close waits for, unless Close has
// begun.
func (c *Coordinator) background(f func()) {
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	if c.closed {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// errAborted is what the client gets when 'abort' won over its commit.
var errAborted = sqlerr.New(sqlerr.SerializationFailure, "transaction aborted by in-doubt resolution").
	WithDetail("The transaction was prepared on every cluster, but its commit decision could not be recorded in time (a resolver had decided to roll it back, or the commit window had passed); it was rolled back on every cluster.").
	WithHint("Retry the transaction.")

// Commit ends the transaction held by parts (two or more participants, each
// in an open transaction that wrote) with two-phase commit. nil means the
// commit decision is durable: every participant commits, now or through
// background retries and the resolver. An error means the transaction was
// rolled back everywhere (or will be, by the resolver), except 08007
// (transaction resolution unknown), where main could not say which
// decision holds. The caller still owns the participants' connections;
// each is outside any transaction when Commit returns, unless it failed.
func (c *Coordinator) Commit(ctx context.Context, parts []Participant, main MainConn) error {
	gid := GIDPrefix + c.id + "_" + strconv.FormatUint(c.seq.Add(1), 10)
	hooks := c.hooks.get()
	clusters := make([]string, len(parts))
	for i, p := range parts {
		clusters[i] = p.Cluster()
	}

	// Phase one. The commit deadline counts from before the first PREPARE:
	// no participant can have been prepared earlier.
	deadline := c.cfg.Now().Add(CommitWindowFactor * c.cfg.InDoubtTimeout)
	for i, p := range parts {
		var err error
		if p.Failed() {
			err = sqlerr.New(sqlerr.InFailedSQLTransaction, "could not prepare the transaction on cluster %s: it has failed", p.Cluster())
		} else if err = p.Exec(ctx, "PREPARE TRANSACTION "+quoteLiteral(preparedName(gid, p))); err == nil {
			continue
		}
		// parts[:i] are prepared; parts[i] failed to prepare (or, when its
		// connection failed, may be prepared: the resolver aborts it, as
		// no decision can be recorded for gid any more).
		c.rollback(ctx, gid, parts, i)
		return err
	}
	if hooks.AfterPrepare != nil {
		if err := hooks.AfterPrepare(gid); err != nil {
			return fmt.Errorf("%w: %w", ErrAbandoned, err)
		}
	}

	o, err := c.decide(ctx, main, gid, clusters, deadline)
	switch {
	case o == "":
		return sqlerr.New(sqlerr.TransactionResolutionUnknown, "transaction resolution unknown: the commit decision for %s could not be confirmed on the main cluster: %v", gid, err).
			WithHint("shardgate's recovery commits or rolls back the transaction on every cluster, whichever was recorded; check the data before retrying.")
	case o == Abort:
		c.rollback(ctx, gid, parts, len(parts))
		if err != nil {
			return err
		}
		return errAborted
	}
	if hooks.AfterDecision != nil {
		if err := hooks.AfterDecision(gid); err != nil {
			return fmt.Errorf("%w: %w", ErrAbandoned, err)
		}
	}

	// Phase two. The decision is durable: failures are retried.
	var pending []pendingCommit
	for _, p := range parts {
		err := p.Exec(ctx, "COMMIT PREPARED "+quoteLiteral(preparedName(gid, p)))
		if err != nil && code(err) != undefinedObject {
			c.cfg.Logger.Warn("COMMIT PREPARED failed; retrying in the background", "gid", gid, "cluster", p.Cluster(), "err", err)
			pending = append(pending, pendingCommit{p.Cluster(), preparedName(gid, p)})
		}
	}
	if len(pending) > 0 {
		c.background(func() { c.retry(gid, pending) })
	} else {
		c.forgetLater(gid)
	}
	return nil
}

// rollback ends a transaction that will not commit: parts[:prepared] are
// prepared, the others still open (or failed). Errors are ignored: what
// stays prepared has no commit decision and is rolled back by the
// resolver.
func (c *Coordinator) rollback(ctx context.Context, gid string, parts []Participant, prepared int) {
	for i, p := range parts {
		if i < prepared {
			_ = p.Exec(ctx, "ROLLBACK PREPARED "+quoteLiteral(preparedName(gid, p)))
		} else {
			_ = p.Exec(ctx, "ROLLBACK")
		}
	}
}

// decide records the commit decision and returns the outcome that holds:
// Commit; Abort with a nil error when a resolver's 'abort' won (or the
// deadline passed); Abort with the error when the decision could not be
// recorded and never will be; "" with the error when main could not tell.
func (c *Coordinator) decide(ctx context.Context, main MainConn, gid string, participants []string, deadline time.Time) (Outcome, error) {
	conn, release, err := main(ctx)
	if err != nil {
		return Abort, err
	}
	if err := c.ensureSchema(ctx, conn); err != nil {
		release()
		return Abort, err
	}
	o, err := propose(ctx, conn, gid, Commit, participants, deadline)
	switch {
	case err == nil && o != "":
		release()
		return o, nil
	case err != nil && !indefinite(err):
		// The INSERT failed, so its implicit transaction rolled back, and
		// this coordinator never proposes 'commit' for gid again.
		release()
		return Abort, err
	case err != nil:
		// The answer was lost with the connection: ask on another one.
		release()
		if conn, release, err = main(ctx); err != nil {
			return "", err
		}
	}
	// No row (deadline passed, or a concurrent insert not yet visible), or
	// a fresh connection after a lost answer: settle it.
	defer release()
	return settle(ctx, conn, gid, participants)
}

func (c *Coordinator) ensureSchema(ctx context.Context, conn DecisionConn) error {
	main, dsns := c.cfg.Clusters()
	key := dsns[main]
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	if c.schemaDone[key] {
		return nil
	}
	if err := ensureSchema(ctx, conn); err != nil {
		return err
	}
	c.schemaDone[key] = true
	return nil
}

// pendingCommit is a participant's transaction still to commit: its
// cluster and prepared name.
type pendingCommit struct{ cluster, name string }

// retry commits gid on the pending clusters until it is committed on each,
// then forgets the decision.
func (c *Coordinator) retry(gid string, pending []pendingCommit) {
	delay := c.cfg.RetryBackoff
	for len(pending) > 0 {
		t := time.NewTimer(delay)
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		_, dsns := c.cfg.Clusters()
		var still []pendingCommit
		for _, pc := range pending {
			if err := c.finish(dsns[pc.cluster], pc.name); err != nil {
				c.cfg.Logger.Warn("COMMIT PREPARED retry failed", "gid", gid, "cluster", pc.cluster, "err", err)
				still = append(still, pc)
			}
		}
		pending = still
		delay = min(2*delay, c.cfg.MaxRetryBackoff)
	}
	c.forgetLater(gid)
}

// finish commits gid on the cluster at dsn; a gid no longer prepared there
// was committed by someone else (nobody rolls back a transaction whose
// commit decision is recorded).
func (c *Coordinator) finish(dsn, gid string) error {
	if dsn == "" {
		return sqlerr.New(sqlerr.ConnectionFailure, "the cluster is not in the current topology")
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.ConnectTimeout+c.cfg.InDoubtTimeout)
	defer cancel()
	conn, err := dial(ctx, dsn, c.cfg.ConnectTimeout)
	if err != nil {
		return err
	}
	defer conn.close()
	if err := conn.Exec(ctx, "COMMIT PREPARED "+quoteLiteral(gid)); err != nil && code(err) != undefinedObject {
		return err
	}
	return nil
}

// forgetLater queues gid's commit row for deletion: every participant has
// committed. When the queue is full the row stays for the resolver.
func (c *Coordinator) forgetLater(gid string) {
	c.forgetOnce.Do(func() { c.background(c.forgetter) })
	select {
	case c.forget <- gid:
	default:
	}
}

// forgetBatch bounds one DELETE of forgotten decisions.
const forgetBatch = 500

// forgetter deletes finished commit rows in batches, on a connection to
// main of its own.
func (c *Coordinator) forgetter() {
	var conn pgConn
	var connDSN string
	defer func() {
		if conn.c != nil {
			conn.close()
		}
	}()
	for {
		var batch []string
		select {
		case <-c.ctx.Done():
			return
		case gid := <-c.forget:
			batch = append(batch, gid)
		}
	more:
		for len(batch) < forgetBatch {
			select {
			case gid := <-c.forget:
				batch = append(batch, gid)
			default:
				break more
			}
		}
		main, dsns := c.cfg.Clusters()
		dsn := dsns[main]
		if conn.c != nil && (connDSN != dsn || conn.c.IsClosed()) {
			conn.close()
			conn.c = nil
		}
		if conn.c == nil {
			var err error
			if conn, err = dial(c.ctx, dsn, c.cfg.ConnectTimeout); err != nil {
				c.cfg.Logger.Warn("cannot forget commit decisions; the resolver will", "cluster", main, "err", err)
				continue
			}
			connDSN = dsn
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.InDoubtTimeout)
		err := conn.Exec(ctx, "DELETE FROM shardgate.commit_decisions WHERE outcome = 'commit' AND gid IN ("+joinQuoted(batch)+")")
		cancel()
		if err != nil {
			c.cfg.Logger.Warn("cannot forget commit decisions; the resolver will", "cluster", main, "err", err)
			conn.close()
			conn.c = nil
		}
	}
}

func joinQuoted(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = quoteLiteral(s)
	}
	return strings.Join(q, ", ")
}

package twopc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/schemalock"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/sqlerr"
)

// GIDPrefix starts the id of every prepared transaction of shardgate; the
// resolver touches no other.
const GIDPrefix = "shardgate_"

// ParticipantGID is the name a transaction is prepared under on cluster:
// the decision's gid plus the cluster, as prepared-transaction names are
// unique per Postgres server, and several clusters may be databases of one.
func ParticipantGID(gid, cluster string) string { return gid + "@" + cluster }

// DecisionGID is the gid of the decision a transaction prepared on cluster
// as prepared belongs to (a name without the cluster suffix is its own).
// A second participant on one cluster (a Parted one) has its part between
// the gid and the cluster, after a '#', which is cut off as well.
func DecisionGID(prepared, cluster string) string {
	gid, _, _ := strings.Cut(strings.TrimSuffix(prepared, "@"+cluster), "#")
	return gid
}

// Parted is a Participant that is not the only one on its cluster: the
// connections of the service identity that write a transaction's GSI
// entries beside the client's own (docs/sessions.md). Part names it in
// the prepared transaction's name.
type Parted interface {
	Part() string
}

// preparedName is the name p prepares gid under.
func preparedName(gid string, p Participant) string {
	if pp, ok := p.(Parted); ok && pp.Part() != "" {
		return ParticipantGID(gid+"#"+pp.Part(), p.Cluster())
	}
	return ParticipantGID(gid, p.Cluster())
}

// Factors of the in-doubt timeout in the timing rules (see the package
// documentation).
const (
	// CommitWindowFactor × InDoubtTimeout after its first PREPARE, a
	// coordinator can no longer record 'commit'.
	CommitWindowFactor = 2
	// AbortRetentionFactor × InDoubtTimeout is how long an 'abort' row is
	// kept at least.
	AbortRetentionFactor = 10
)

// Outcome is a recorded decision.
type Outcome string

// The two decisions.
const (
	Commit Outcome = "commit"
	Abort  Outcome = "abort"
)

// Conn runs statements on one backend connection.
type Conn interface {
	// Exec runs one statement with the simple protocol and discards its
	// rows. An error that carries no SQLSTATE, or one of class 08 or 57P
	// (connection failure, server shutdown), means the connection failed
	// and whether the statement took effect is unknown; any other SQLSTATE
	// means it did not.
	Exec(ctx context.Context, sql string) error
}

// Participant is the connection that holds one cluster's part of a
// transaction, open and not yet ended.
type Participant interface {
	Conn
	// Cluster names the cluster, as a ClusterSource does.
	Cluster() string
	// Failed reports whether the transaction on the connection is in the
	// failed state (an error occurred and was not rolled back to a
	// savepoint). Postgres answers PREPARE TRANSACTION of such a
	// transaction by rolling it back, without an error, so the coordinator
	// asks first.
	Failed() bool
}

// DecisionConn is a connection to the main cluster, where decisions are
// recorded.
type DecisionConn interface {
	Conn
	// QueryRow runs one statement with the simple protocol and returns its
	// first row's values as text ("" for NULL); found is false when it
	// returned no row. Errors are as for Exec.
	QueryRow(ctx context.Context, sql string) (row []string, found bool, err error)
}

// MainConn lends the coordinator a connection to main for recording a
// decision; the coordinator calls release when done with it. It may be
// called a second time when the first connection failed.
type MainConn func(ctx context.Context) (conn DecisionConn, release func(), err error)

// ClusterSource returns the current topology's main cluster and every
// cluster's DSN by name. It is called on every resolver pass and
// background retry, so a reloaded topology is followed.
type ClusterSource func() (main string, dsns map[string]string)

// Config configures a Coordinator or a Resolver. Clusters is required.
type Config struct {
	// Clusters says how to reach the clusters.
	Clusters ClusterSource
	// InDoubtTimeout is how long a prepared transaction without a decision
	// is left to its coordinator before a resolver aborts it (default 1
	// minute). It must be longer than any commit takes; see the timing
	// rules of the package documentation for the windows derived from it.
	InDoubtTimeout time.Duration
	// ConnectTimeout bounds connecting to a cluster (default 5 seconds).
	ConnectTimeout time.Duration
	// RetryBackoff is the first delay before a failed COMMIT PREPARED is
	// retried in the background (default 1 second); it doubles after each
	// failure up to MaxRetryBackoff (default 1 minute).
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
	// Now is the clock (default time.Now). Tests simulate time with it.
	Now func() time.Time
	// ProxyID goes into every gid, to tell proxies apart (default: random).
	ProxyID string
	// Logger receives warnings about failures that are retried and the
	// decisions recovery carries out (default slog.Default()).
	Logger *slog.Logger
	// Resolved, when set, is told what each successful resolver pass
	// finished (metrics).
	Resolved func(Result)
}

func (c Config) withDefaults() Config {
	if c.InDoubtTimeout <= 0 {
		c.InDoubtTimeout = time.Minute
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 5 * time.Second
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.MaxRetryBackoff < c.RetryBackoff {
		c.MaxRetryBackoff = max(time.Minute, c.RetryBackoff)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Hooks are failpoints for tests. Nil members do nothing.
type Hooks struct {
	// AfterPrepare runs in the coordinator once every participant is
	// prepared, before the decision. AfterDecision runs once 'commit' is
	// recorded, before COMMIT PREPARED. A non-nil error abandons the commit
	// as if the proxy died there: nothing more is sent, and Commit returns
	// the error wrapped with ErrAbandoned.
	AfterPrepare  func(gid string) error
	AfterDecision func(gid string) error
	// BeforePropose runs in the resolver before it proposes 'abort' for an
	// undecided transaction; BeforeFinish before it runs COMMIT PREPARED or
	// ROLLBACK PREPARED for the outcome found.
	BeforePropose func(gid string)
	BeforeFinish  func(gid, cluster string, o Outcome)
}

// hookSet holds Hooks that tests may replace while the coordinator or
// resolver runs.
type hookSet struct{ p atomic.Pointer[Hooks] }

func (h *hookSet) set(v Hooks) { h.p.Store(&v) }

func (h *hookSet) get() Hooks {
	if v := h.p.Load(); v != nil {
		return *v
	}
	return Hooks{}
}

// ErrAbandoned marks the error of a Commit that a hook stopped.
var ErrAbandoned = errors.New("two-phase commit abandoned by a test hook")

// The decision log. The table of older versions has no outcome column: it
// is added in place, and its rows (all commit decisions) read as 'commit'.
const (
	createDDL = schemalock.Prefix + `CREATE SCHEMA IF NOT EXISTS shardgate;
CREATE TABLE IF NOT EXISTS shardgate.commit_decisions (
    gid          text PRIMARY KEY,
    outcome      text NOT NULL DEFAULT 'commit',
    participants text[] NOT NULL,
    decided_at   timestamptz NOT NULL DEFAULT now()
)`
	hasOutcomeSQL = `SELECT count(*) FROM pg_catalog.pg_attribute
WHERE attrelid = 'shardgate.commit_decisions'::regclass AND attname = 'outcome' AND NOT attisdropped`
	upgradeDDL = `ALTER TABLE shardgate.commit_decisions ADD COLUMN IF NOT EXISTS outcome text NOT NULL DEFAULT 'commit'`
)

// ensureSchema creates or upgrades the decision log. Several proxies may
// run it at once.
func ensureSchema(ctx context.Context, conn DecisionConn) error {
	err := conn.Exec(ctx, createDDL)
	if lostCreateRace(err) {
		err = conn.Exec(ctx, createDDL)
	}
	if err != nil {
		return err
	}
	row, found, err := conn.QueryRow(ctx, hasOutcomeSQL)
	if err != nil {
		return err
	}
	if found && row[0] == "1" {
		return nil
	}
	// Concurrent upgrades queue on the table's lock; the later ones find
	// the column and do nothing.
	return conn.Exec(ctx, upgradeDDL)
}

// lostCreateRace reports the error of CREATE ... IF NOT EXISTS that ran
// concurrently with the same statement elsewhere (another proxy, a
// resolver): both see no object, one fails on the catalog's unique index.
// Running it again finds the object.
func lostCreateRace(err error) bool {
	switch code(err) {
	case "23505", "42P06", "42P07":
		return true
	}
	return false
}

// code is err's SQLSTATE, "" when it carries none.
func code(err error) string {
	var s interface{ SQLState() string }
	if errors.As(err, &s) {
		return s.SQLState()
	}
	return ""
}

// indefinite reports whether err leaves unknown whether the statement took
// effect: the connection failed rather than the statement.
func indefinite(err error) bool {
	c := code(err)
	return c == "" || strings.HasPrefix(c, "08") || strings.HasPrefix(c, "57P")
}

// undefinedObject is the SQLSTATE of COMMIT/ROLLBACK PREPARED for a gid no
// longer prepared: someone else finished it.
const undefinedObject = "42704"

// propose records outcome o for gid unless a decision exists, and returns
// the decision that holds ("" when the statement returned no row: the
// deadline passed, or a concurrent insert is not yet visible to the
// statement's snapshot). A zero deadline means none.
func propose(ctx context.Context, conn DecisionConn, gid string, o Outcome, participants []string, deadline time.Time) (Outcome, error) {
	where := ""
	if !deadline.IsZero() {
		where = " WHERE clock_timestamp() < " + timestampLiteral(deadline)
	}
	q := fmt.Sprintf(`WITH ins AS (
    INSERT INTO shardgate.commit_decisions (gid, outcome, participants)
    SELECT %s, %s, %s%s
    ON CONFLICT (gid) DO NOTHING
    RETURNING outcome)
SELECT outcome FROM ins
UNION ALL
SELECT outcome FROM shardgate.commit_decisions WHERE gid = %s`,
		quoteLiteral(gid), quoteLiteral(string(o)), textArray(participants), where, quoteLiteral(gid))
	row, found, err := conn.QueryRow(ctx, q)
	if err != nil || !found {
		return "", err
	}
	return Outcome(row[0]), nil
}

// settle proposes 'abort' until an outcome is visible: the one that holds
// for gid from now on.
func settle(ctx context.Context, conn DecisionConn, gid string, participants []string) (Outcome, error) {
	for range 3 {
		o, err := propose(ctx, conn, gid, Abort, participants, time.Time{})
		if err != nil || o != "" {
			return o, err
		}
	}
	return "", sqlerr.New(sqlerr.InternalError, "the decision for %s neither inserted nor visible", gid)
}

// pgConn is a connection the package opened itself.
type pgConn struct{ c *pgconn.PgConn }

func dial(ctx context.Context, dsn string, timeout time.Duration) (pgConn, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return pgConn{}, err
	}
	cfg.ConnectTimeout = timeout
	c, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return pgConn{}, err
	}
	return pgConn{c}, nil
}

func (p pgConn) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = p.c.Close(ctx)
}

// Exec implements Conn.
func (p pgConn) Exec(ctx context.Context, sql string) error {
	_, err := p.c.Exec(ctx, sql).ReadAll()
	return err
}

// QueryRow implements DecisionConn.
func (p pgConn) QueryRow(ctx context.Context, sql string) ([]string, bool, error) {
	rows, err := p.query(ctx, sql)
	if err != nil || len(rows) == 0 {
		return nil, false, err
	}
	return rows[0], true, nil
}

// query returns the rows of sql's last result as text.
func (p pgConn) query(ctx context.Context, sql string) ([][]string, error) {
	results, err := p.c.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(results) == 0 {
		return nil, nil
	}
	last := results[len(results)-1]
	out := make([][]string, len(last.Rows))
	for i, r := range last.Rows {
		out[i] = make([]string, len(r))
		for j, v := range r {
			out[i][j] = string(v)
		}
	}
	return out, nil
}

// quoteLiteral quotes s as an SQL string literal, whatever
// standard_conforming_strings says.
func quoteLiteral(s string) string {
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if strings.Contains(s, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

// textArray is an SQL text[] of list.
func textArray(list []string) string {
	return "ARRAY[" + joinQuoted(list) + "]::text[]"
}

func timestampLiteral(t time.Time) string {
	return quoteLiteral(t.UTC().Format("2006-01-02 15:04:05.999999Z07:00")) + "::timestamptz"
}

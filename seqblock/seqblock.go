package seqblock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// Sequence values for the planner's draws (planner.SequenceSource): an
// INSERT that omits a sequence-bound column, nextval('seq') in VALUES,
// a table-less SELECT nextval('seq').
//
// Values come from blocks reserved on the main cluster, so a statement
// costs no round trip to main until its sequence's block runs out. A block
// is reserved in one round trip with
//
//	SELECT nextval('seq') FROM generate_series(1, n)
//
// Every value nextval returns is unique for the sequence's life, whoever
// calls it: other proxies, a restarted proxy, applications on main itself.
// So blocks of different proxies never overlap, a restart never reuses a
// value, and the sequence's own increment, bounds and CYCLE keep their
// meaning. The alternatives were worse: ALTER SEQUENCE ... INCREMENT BY n
// changes the sequence for every other user and takes a lock that DDL
// would have to wait for; setval(nextval() + n) is not atomic, so two
// proxies could reserve overlapping ranges. The price of generate_series
// is n nextval calls on main per block, a few microseconds each, and a
// block that is not one contiguous range when others draw at the same
// time, which is why a block is a list of values, not a range.
//
// As with Postgres's CACHE, values a proxy reserved but did not use are
// lost when it stops: ids are unique and increase per proxy, with gaps.
//
// The block size adapts: it starts at Config.SequenceBlock (default 100),
// doubles (up to Config.SequenceBlockMax, default 10000) when a block lasted
// less than a second, and halves back when one lasted more than a minute.
// A statement that needs more values than a block reserves them all at
// once.
//
// Reservations use one connection of the proxy's own to main, outside the
// pools: a session that holds pooled connections in its transaction while
// waiting for values must never wait for a pooled connection itself.

// Main says where the main group's cluster is: its name and DSN, read at
// every reservation, so a reload that moves main is followed.
type Main interface {
	MainDSN() (cluster, dsn string)
}

// Config sizes the blocks and bounds the reservation connection's dial.
type Config struct {
	// Block is the first block size (default 100); BlockMax bounds how
	// far it grows (default 10000).
	Block, BlockMax int
	// ConnectTimeout bounds dialing main (0: pgconn's default).
	ConnectTimeout time.Duration
}

const (
	defaultSequenceBlock    = 100
	defaultSequenceBlockMax = 10000
	sequenceFetchTimeout    = 30 * time.Second
)

// Source is the proxy's planner.SequenceSource: the reserved blocks of
// every sequence it draws from. It is safe for concurrent use.
type Source struct {
	main           Main
	connectTimeout time.Duration
	min, max       int

	mu    sync.Mutex // guards state
	state map[string]*seqBlock

	connMu  sync.Mutex // one reservation at a time on conn
	conn    *pgconn.PgConn
	connDSN string
}

// seqBlock is the unused rest of one sequence's reserved values.
type seqBlock struct {
	mu      sync.Mutex
	vals    []int64
	size    int       // the next block's size
	fetched time.Time // when the current block was reserved
	dsn     string    // the main cluster the values came from
}

// New returns a source that reserves values on main's cluster.
func New(main Main, cfg Config) *Source {
	s := &Source{main: main, connectTimeout: cfg.ConnectTimeout, min: cfg.Block, max: cfg.BlockMax, state: map[string]*seqBlock{}}
	if s.min <= 0 {
		s.min = defaultSequenceBlock
	}
	if s.max < s.min {
		s.max = defaultSequenceBlockMax
		if s.max < s.min {
			s.max = s.min
		}
	}
	return s
}

// Next implements planner.SequenceSource.
func (s *Source) Next(seq string, n int) ([]int64, error) {
	if n <= 0 {
		return nil, nil
	}
	s.mu.Lock()
	b := s.state[seq]
	if b == nil {
		b = &seqBlock{size: s.min}
		s.state[seq] = b
	}
	s.mu.Unlock()

	// Holding b.mu while reserving is deliberate: sessions that want the
	// same sequence wait for the one reservation instead of making their
	// own.
	b.mu.Lock()
	defer b.mu.Unlock()
	cluster, dsn := s.main.MainDSN()
	if b.dsn != dsn {
		// Main moved to another cluster: values reserved on the old one
		// say nothing about the new one's sequence.
		b.vals, b.dsn = nil, dsn
	}
	if len(b.vals) >= n {
		out := append([]int64(nil), b.vals[:n]...)
		b.vals = b.vals[n:]
		return out, nil
	}
	if !b.fetched.IsZero() {
		switch lasted := time.Since(b.fetched); {
		case lasted < time.Second && b.size < s.max:
			b.size = min(2*b.size, s.max)
		case lasted > time.Minute && b.size > s.min:
			b.size = max(b.size/2, s.min)
		}
	}
	need := n - len(b.vals)
	fetch := max(b.size, need)
	vals, err := s.reserve(cluster, dsn, seq, fetch)
	if err != nil {
		return nil, err
	}
	b.fetched = time.Now()
	out := make([]int64, 0, n)
	out = append(out, b.vals...)
	out = append(out, vals[:need]...)
	b.vals = vals[need:]
	return out, nil
}

// reserve draws n values of seq on main in one round trip.
func (s *Source) reserve(cluster, dsn, seq string, n int) ([]int64, error) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), sequenceFetchTimeout)
	defer cancel()
	if s.conn != nil && (s.connDSN != dsn || s.conn.IsClosed()) {
		_ = s.conn.Close(ctx)
		s.conn = nil
	}
	if s.conn == nil {
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil {
			return nil, sqlerr.New("08006", "cluster %s: %v", cluster, err)
		}
		if ct := s.connectTimeout; ct > 0 {
			cfg.ConnectTimeout = ct
		}
		c, err := pgconn.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, sqlerr.New("08006", "cluster %s is unreachable: %v", cluster, err).
				WithHint("The proxy draws sequence values from the main group's cluster.")
		}
		s.conn, s.connDSN = c, dsn
	}
	sql := "SELECT nextval(" + pgwire.QuoteLiteral(seq) + ") FROM generate_series(1, " + strconv.Itoa(n) + ")"
	res := s.conn.Exec(ctx, sql)
	results, err := res.ReadAll()
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return nil, pgwire.Annotate(err, cluster)
		}
		_ = s.conn.Close(ctx)
		s.conn = nil
		return nil, sqlerr.New("08006", "cluster %s: reserving values of sequence %s: %v", cluster, seq, err)
	}
	if len(results) != 1 || len(results[0].Rows) != n {
		return nil, sqlerr.New("XX000", "reserving values of sequence %s: got an unexpected answer", seq)
	}
	out := make([]int64, n)
	for i, row := range results[0].Rows {
		v, err := strconv.ParseInt(strings.TrimSpace(string(row[0])), 10, 64)
		if err != nil {
			return nil, sqlerr.New("XX000", "reserving values of sequence %s: %v", seq, err)
		}
		out[i] = v
	}
	return out, nil
}

// Close drops the reservation connection. A later Next dials again.
func (s *Source) Close() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = s.conn.Close(ctx)
		cancel()
		s.conn = nil
	}
}

package backend

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/pgwire"
)

// Conn is one connection to a backend cluster, taken over from pgconn
// after connect and authentication (pgconn.Hijack), so the proxy speaks the
// protocol on it directly.
//
// Ownership: a Conn belongs to its pool while idle and to exactly one
// session while leased (Pool.Acquire → Pool.Release). Only the owner may
// read or write it, and only the owner reads or sets the exported fields.
type Conn struct {
	pool *Pool
	// gen is the pool's generation when it was dialed: one dialed before
	// a failover moved the pool to another host is closed on release.
	gen uint64
	// LeaseWait is how long the Acquire that lent the connection waited
	// for one (pool exhausted or paused); 0 when it did not wait.
	LeaseWait time.Duration
	// pooled is set while the connection is in its pool's idle list
	// (written under the pool's mutex): a Send, Flush or Read then is a
	// caller's bug (it gave the connection back and kept using it), refused
	// with ErrReleased and counted, so it never reaches the next borrower.
	pooled  atomic.Bool
	netConn net.Conn
	in      *pgwire.Reader
	out     *bufio.Writer
	enc     pgwire.Encoder

	pid    uint32
	secret []byte
	// Params are the server's parameters as its ParameterStatus messages
	// last reported them.
	Params map[string]string

	TxStatus byte // from the last ReadyForQuery
	Broken   bool // an I/O error or protocol confusion: never reuse

	// SettingsKey identifies the session settings applied on this
	// connection (see the proxy's session.settingsKey); equal keys mean
	// nothing needs replaying. "" is unknown settings.
	SettingsKey string
	// SettingsUnseen: the connection ran code the proxy cannot see into
	// (a DO block, a function of the user's), which may have changed its
	// settings. The session checks them before giving it back; a
	// Release that finds it still set resets them (Pool.Release).
	SettingsUnseen bool
	// Prepared maps a statement identity (SQL + parameter OIDs) to the name
	// it is prepared under on this connection; NextStmt numbers those
	// names.
	Prepared map[string]string
	NextStmt int
	// Unnamed is what the proxy last parsed as this connection's unnamed
	// statement (its own token, compared by identity); an unnamed Parse or
	// a simple Query, which replace or drop that statement, clear it.
	Unnamed any
	// user is the role the connection is logged in as ("": the DSN's
	// user); the pool lends it to sessions of that role only.
	user string
	// forgetSeen is how much of the pool's forget log this connection
	// has read (forget.go).
	forgetSeen int64
	// Notifications are NotificationResponse bodies read but not yet
	// delivered (see notify.go).
	Notifications [][]byte

	idleSince time.Time
	// watched: the connection's socket is in the process's hang-up watch
	// (hangup_linux.go), under registration hangupID for socket hangupFD;
	// hungUp is set when its server hung up. A lend of a watched
	// connection checks the flag; others peek (alive).
	watched  bool
	hungUp   atomic.Bool
	hangupFD int32
	hangupID int32
	peek     *peeker // alive's look at the socket, made on first use
	peeks    int     // alive's looks so far (for tests)
	created  time.Time
	// client is the id of the client session the connection serves (0:
	// none), for SHOW SERVERS.
	client atomic.Uint32
	// cancelMu is held while a cancel for the connection's statement is
	// being delivered (Cancel, HoldForCancel): Release waits for it in the
	// background.
	cancelMu sync.Mutex
}

// SetClient records which client session the connection serves; Release
// clears it.
func (b *Conn) SetClient(id uint32) { b.client.Store(id) }

// testHookDial, set by tests, wraps how pgconn dials a backend.
var testHookDial func(pgconn.DialFunc) pgconn.DialFunc

// dialBackend connects and authenticates with pgconn, then takes the
// connection over.
func dialBackend(ctx context.Context, p *Pool, login Login) (*Conn, error) {
	p.mu.Lock()
	timeout, dsn, gen := p.connectTimeout, p.dsn, p.gen
	p.mu.Unlock()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	login.configure(cfg)
	if timeout > 0 {
		cfg.ConnectTimeout = timeout
	}
	if testHookDial != nil {
		cfg.DialFunc = testHookDial(cfg.DialFunc)
	}
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// pgconn may still have a background reader in a Read on the socket
	// (started when a write of the start-up took long, as on a loaded
	// machine), or bytes in its buffer: either would take the answer to
	// the proxy's first statement, which then waits forever. SyncConn
	// stops and drains them, as Hijack's documentation asks.
	if err := pc.SyncConn(ctx); err != nil {
		pc.Close(ctx)
		return nil, err
	}
	h, err := pc.Hijack()
	if err != nil {
		pc.Close(ctx)
		return nil, err
	}
	nc := unwrapLogin(h.Conn)
	b := &Conn{
		pool:     p,
		netConn:  nc,
		in:       pgwire.NewReader(nc),
		out:      bufio.NewWriterSize(nc, 16*1024),
		pid:      h.PID,
		secret:   h.SecretKey,
		Params:   h.ParameterStatuses,
		TxStatus: 'I',
		Prepared: map[string]string{},
		created:  time.Now(),
		gen:      gen,

		forgetSeen: p.forget.n.Load(),
	}
	b.enc.Reset(b.out)
	b.watched = watchHangup(b)
	return b, nil
}

// Cluster names the cluster the connection belongs to.
func (b *Conn) Cluster() string { return b.pool.cluster }

// Pool is the pool the connection belongs to.
func (b *Conn) Pool() *Pool { return b.pool }

// Release gives the connection back to its pool (see Pool.Release).
func (b *Conn) Release() { b.pool.Release(b) }

// Send appends a message to the connection's buffer (not flushed). An
// error marks the connection broken, as every I/O error does.
func (b *Conn) Send(msg pgwire.Encodable) error {
	if b.pooled.Load() {
		return b.pool.usedWhilePooled()
	}
	switch m := msg.(type) {
	case *pgproto3.Query:
		b.Unnamed = nil
	case *pgproto3.Parse:
		if m.Name == "" {
			b.Unnamed = nil
		}
	}
	if err := b.enc.Send(msg); err != nil {
		b.Broken = true
		return err
	}
	return nil
}

// SendQuery, SendExecute, SendDescribe and SendBind are Send of those messages
// without boxing them (pgwire.Encoder.SendQuery).
func (b *Conn) SendQuery(sql string) error {
	if b.pooled.Load() {
		return b.pool.usedWhilePooled()
	}
	b.Unnamed = nil
	return b.sent(b.enc.SendQuery(sql))
}

func (b *Conn) SendExecute(portal string, maxRows uint32) error {
	if b.pooled.Load() {
		return b.pool.usedWhilePooled()
	}
	return b.sent(b.enc.SendExecute(portal, maxRows))
}

func (b *Conn) SendDescribe(objectType byte, name string) error {
	if b.pooled.Load() {
		return b.pool.usedWhilePooled()
	}
	return b.sent(b.enc.SendDescribe(objectType, name))
}

func (b *Conn) SendBind(m *pgproto3.Bind) error {
	if b.pooled.Load() {
		return b.pool.usedWhilePooled()
	}
	return b.sent(b.enc.SendBind(m))
}

func (b *Conn) sent(err error) error {
	if err != nil {
		b.Broken = true
	}
	return err
}

// SendRaw appends a message of the given type and body, unencoded (not
// flushed): COPY data the proxy forwards as it came.
func (b *Conn) SendRaw(typ byte, body []byte) error {
	if b.pooled.Load() {
		return b.pool.usedWhilePooled()
	}
	if err := pgwire.WriteRaw(b.out, typ, body); err != nil {
		b.Broken = true
		return err
	}
	return nil
}

// Flush writes what Send and SendRaw buffered.
func (b *Conn) Flush() error {
	if b.pooled.Load() {
		return b.pool.usedWhilePooled()
	}
	if err := b.out.Flush(); err != nil {
		b.Broken = true
		return err
	}
	return nil
}

// Read reads the next message; its body is valid until the next Read.
// NotificationResponse messages are kept aside (see notify.go).
func (b *Conn) Read() (pgwire.RawMessage, error) {
	if b.pooled.Load() {
		return pgwire.RawMessage{}, b.pool.usedWhilePooled()
	}
	for {
		m, err := b.in.Next()
		if err != nil {
			b.Broken = true
		}
		if err != nil || m.Type != 'A' {
			return m, err
		}
		b.keepNotification(m.Body)
	}
}

// ReadRun returns the complete messages already read from the backend,
// at the head of its buffer, whose types are in pass, in wire form
// (pgwire.Reader.Run): empty when the next message is not one of them or
// is not read yet (Read reads it). Valid until the next Read or ReadRun.
func (b *Conn) ReadRun(pass pgwire.TypeSet) []byte {
	if b.pooled.Load() {
		return nil
	}
	return b.in.Run(pass.Without('A')) // notifications are kept aside by Read
}

// close ends the connection (Terminate, then close): for the pool, and for
// connections that must not be reused.
func (b *Conn) close() {
	if b.pool != nil {
		b.pool.mu.Lock()
		delete(b.pool.all, b)
		b.pool.mu.Unlock()
	}
	unwatchHangup(b)
	if b.netConn != nil {
		// Terminate politely; ignore errors, the socket is going away.
		_ = b.netConn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = b.netConn.Write([]byte{'X', 0, 0, 0, 4})
		_ = b.netConn.Close()
	}
}

// lendable reports whether an idle connection's server is still there,
// checked as it is lent: a restarted or stopped backend leaves a closed
// socket behind. A watched connection's flag says so without a system
// call (the hang-up watch saw the close); another is peeked at (alive).
func (b *Conn) lendable() bool {
	if b.watched {
		return !b.hungUp.Load()
	}
	return b.alive()
}

// alive reports whether the server side of an idle connection is still
// there: a restarted or stopped backend leaves a closed socket (or a FATAL
// message) behind, which a non-blocking peek sees without a round trip.
func (b *Conn) alive() bool {
	b.peeks++
	if b.peek == nil {
		sc, ok := socketOf(b.netConn)
		if !ok {
			return true
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			return false
		}
		b.peek = &peeker{raw: raw}
		b.peek.fn = b.peek.look // bound once: a lend allocates nothing
	}
	return b.peek.alive()
}

// peeker is a connection's non-blocking look at its socket, made once.
type peeker struct {
	raw   syscall.RawConn
	fn    func(fd uintptr) bool
	buf   [1]byte
	found bool // the last look saw the peer there
}

func (p *peeker) alive() bool {
	p.found = false
	return p.raw.Read(p.fn) == nil && p.found
}

func (p *peeker) look(fd uintptr) bool {
	n, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	// EAGAIN: nothing to read, the peer is there. Anything else is EOF,
	// an error, or unsolicited bytes (a FATAL sent before closing).
	p.found = (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK) && n <= 0
	return true
}

// SimpleExec runs a query with the simple protocol and discards its results,
// returning the first error the backend reported. Used for the proxy's own
// statements (BEGIN, SET replay, COMMIT); ParameterStatus messages are
// collected into into when non-nil.
func (b *Conn) SimpleExec(sql string, into map[string]string) error {
	if err := b.Send(&pgproto3.Query{String: sql}); err != nil {
		return err
	}
	if err := b.Flush(); err != nil {
		return err
	}
	return b.DrainUntilReady(into)
}

// DrainUntilReady reads and discards up to and including ReadyForQuery,
// returning the first ErrorResponse as a *pgconn.PgError.
func (b *Conn) DrainUntilReady(into map[string]string) error {
	var first error
	for {
		m, err := b.Read()
		if err != nil {
			return err
		}
		switch m.Type {
		case 'E':
			if first == nil {
				var e pgproto3.ErrorResponse
				if derr := e.Decode(m.Body); derr != nil {
					b.Broken = true
					return derr
				}
				first = pgwire.PgErrorFrom(&e)
			}
		case 'S':
			if ps := b.Observe(m); ps != nil && into != nil {
				into[ps.Name] = ps.Value
			}
		case 'Z':
			b.Observe(m)
			return first
		case 'G': // COPY IN started by a proxy statement: refuse it.
			_ = b.Send(&pgproto3.CopyFail{Message: "shardgate: COPY not expected here"})
			_ = b.Flush()
		}
	}
}

// Cancel asks the backend to cancel what the connection is running: a
// CancelRequest on a connection of its own, which returns once the
// postmaster has signalled the backend. It does nothing for a cluster
// reached over a Unix socket.
func (b *Conn) Cancel(ctx context.Context) error {
	b.cancelMu.Lock()
	return b.deliverCancel(ctx)
}

// HoldForCancel reserves conns for a cancel of their statements, skipping
// those a cancel is being delivered to already: until DeliverCancels has
// delivered it, a Release does not put a connection back in the pool — it
// goes back afterwards, in the background, so a late cancel never reaches
// a statement of whoever gets the connection next, and the session that
// releases it does not wait for the cancel's round trip.
func HoldForCancel(conns []*Conn) []*Conn {
	var held []*Conn
	for _, b := range conns {
		if !slices.Contains(held, b) && b.cancelMu.TryLock() {
			held = append(held, b)
		}
	}
	return held
}

// DeliverCancels sends the cancels HoldForCancel reserved conns for,
// logging failures.
func DeliverCancels(held []*Conn, log *slog.Logger) {
	for _, b := range held {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if err := b.deliverCancel(ctx); err != nil {
			log.Warn("cancel request failed", "cluster", b.Cluster(), "err", err)
		}
		cancel()
	}
}

func (b *Conn) deliverCancel(ctx context.Context) error {
	defer b.cancelMu.Unlock()
	if b.pool.addr == "" {
		return nil
	}
	return sendCancel(ctx, b.pool.addr, b.pid, b.secret)
}

// sendCancel asks the backend at addr to cancel whatever pid is running.
func sendCancel(ctx context.Context, addr string, pid uint32, secret []byte) error {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 12+len(secret))
	binary.BigEndian.PutUint32(buf[0:4], uint32(len(buf)))
	binary.BigEndian.PutUint32(buf[4:8], 80877102)
	binary.BigEndian.PutUint32(buf[8:12], pid)
	copy(buf[12:], secret)
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(buf); err != nil {
		return err
	}
	// The server closes the connection when done; wait for that.
	var one [1]byte
	_, _ = c.Read(one[:])
	return nil
}

// backendAddr is the host:port of a DSN, for CancelRequest.
func backendAddr(dsn string) (string, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", err
	}
	if cfg.Host == "" {
		return "", errors.New("no host in DSN")
	}
	if cfg.Host[0] == '/' {
		return "", fmt.Errorf("unix socket backends cannot be cancelled over TCP")
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), nil
}

// Pending reports, without blocking, whether the backend has sent
// something not yet read.
func (b *Conn) Pending() bool {
	if b.in.Buffered() > 0 {
		return true
	}
	raw, ok := rawSocketOf(b.netConn)
	if !ok {
		return false
	}
	has := false
	var buf [1]byte
	_ = raw.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		has = n > 0 || (rerr == nil && n == 0) || (rerr != nil && rerr != syscall.EAGAIN && rerr != syscall.EWOULDBLOCK && rerr != syscall.EINTR)
		return true
	})
	return has
}

// Query runs a query with the simple protocol on an idle connection and
// returns its rows' text values (nil for NULL), copied out of the read
// buffer. The first error the backend reports comes back as a
// *pgconn.PgError once the connection is ready again; ParameterStatus
// messages are recorded. It serves the proxy's own catalog queries.
func (b *Conn) Query(sql string) ([][][]byte, error) {
	if err := b.Send(&pgproto3.Query{String: sql}); err != nil {
		return nil, err
	}
	if err := b.Flush(); err != nil {
		return nil, err
	}
	var rows [][][]byte
	var first error
	for {
		m, err := b.Read()
		if err != nil {
			return nil, err
		}
		switch m.Type {
		case 'D':
			row, err := pgwire.ParseDataRow(m.Body)
			if err != nil {
				b.Broken = true
				return nil, err
			}
			rows = append(rows, row)
		case 'E':
			if first == nil {
				var e pgproto3.ErrorResponse
				if err := e.Decode(m.Body); err != nil {
					b.Broken = true
					return nil, err
				}
				first = pgwire.PgErrorFrom(&e)
			}
		case 'S':
			b.Observe(m)
		case 'Z':
			b.Observe(m)
			return rows, first
		}
	}
}

// Observe keeps what a message from the backend says about the connection
// itself: the parameter of a ParameterStatus (returned, for the caller to
// pass on) and the transaction status of a ReadyForQuery.
func (b *Conn) Observe(m pgwire.RawMessage) *pgproto3.ParameterStatus {
	switch m.Type {
	case 'S':
		var ps pgproto3.ParameterStatus
		if ps.Decode(m.Body) == nil {
			b.Params[ps.Name] = ps.Value
			return &ps
		}
	case 'Z':
		if len(m.Body) > 0 {
			b.TxStatus = m.Body[0]
		}
	}
	return nil
}

package proxy

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/admin"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/clientwait"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sessionstate"
	"github.com/shardgate/shardgate/sqlerr"
)

// parkAfter: a session that waits one to two of these for its client parks.
var parkAfter = 100 * time.Millisecond

// session is one client connection. Its goroutine owns every field; only
// runningConns is read by the cancel path, under runMu.
type session struct {
	srv  *Server
	conn net.Conn
	raw  net.Conn // the socket under conn, for parking; nil with TLS
	// sock is the client's socket as accepted (under TLS too): peeked at
	// and closed to end a session that must (sessionend.go).
	sock net.Conn
	// ending: the session was told to end (terminateSession).
	ending atomic.Bool
	rd     *pgwire.ClientReader
	out    *bufio.Writer // pooled; nil while parked
	enc    pgwire.Encoder
	wc     *merge.WireClient // out as merges' client (mergeClient)
	// heldAt: when the gate began to hold the extended batch being read
	// (zero: not held), reported to it once the batch is answered.
	heldAt time.Time

	pid    uint32
	secret []byte

	user, database string
	startup        map[string]string // client's startup parameters (shared, read only)
	params         map[string]string // ParameterStatus values the client has seen (shared)

	// settings are the session's SET values, replayed on every backend
	// connection it is lent (transaction pooling). Ordered by name.
	settings    map[string]string
	settingsKey string
	noWait      bool // acquire takes only a connection free at once (startparams.go)
	// unseen is set while a statement that may change settings unseen
	// runs (unseen.go): the connections it leases are checked.
	unseen bool

	tx *txState

	stmts     map[string]*clientStmt // nil until the first (put)
	portals   map[string]*portal     // nil until the first (put)
	suspended merge.Suspended        // merges a row limit left open (merges.go)
	mcursors  merge.Cursors          // cursors merged across clusters (cursors.go)

	// held are the connections of session pooling mode, one per cluster.
	held map[string]*backend.Conn

	runMu    sync.Mutex
	running  []*backend.Conn
	waiting  atomic.Bool // in a pool wait, which a send on stopWait ends
	stopWait chan struct{}

	// Extended protocol state between Syncs.
	batchConns map[string]*backend.Conn
	batchOrder []*backend.Conn
	errored    map[*backend.Conn]bool
	extFailed  bool
	// extMsgs are the messages read since the last Sync or Flush and not
	// yet run; ext the batch that ran those before them, when the client
	// paused mid-batch (pushBatch).
	extMsgs []pgproto3.FrontendMessage
	ext     *batch
	store   *extStorage // made by the first extended-protocol message (extStore)
	// extTx is set while tx is the implicit transaction the extended
	// protocol opened for a write on several clusters; Sync ends it.
	extTx bool
	// batchOn and batchWrote: where the statements bound since the last
	// Sync outside a transaction block run, and whether one writes (batchtx.go).
	batchOn    string
	batchWrote bool

	// pinned: the session made state that lives on its backend connections
	// (temporary tables): it keeps them, as in session pooling, until it
	// ends, when they are reset with DISCARD ALL.
	pinned bool
	// spreadAtSync is what extended-protocol statements of the batch did
	// to settings, for the attached connections at Sync (noteState).
	spreadAtSync string

	// cursors are the session's open cursors (cursors.go); listening its
	// notification channels (listen.go); pinning is set while a statement
	// that makes such state runs.
	cursors   sessionstate.Cursors // nil until the first (put)
	listening sessionstate.Channels
	pinning   bool
	// locked: the session took advisory locks; unlocked: it ran an
	// unlock since, and settle asks pg_locks whether any are left.
	locked, unlocked bool

	wait    clientwait.Wait // drain.go; parking: the next read parks
	parking bool

	info admin.ClientState // what the admin console shows of the session
	// rowsMark is enc.TagRows when the last statement was counted, and
	// poolWait the pool waits since (observe).
	rowsMark int64
	poolWait time.Duration

	// refuse, if set, is the answer to the client's StartupMessage (too
	// many clients, limits.go); authDeadline ends its start-up.
	refuse       error
	authDeadline time.Time
	// login is who the session's backend connections are logged in as
	// (identity.go); its zero value is the DSN's user.
	login backend.Login
	// defaultTarget is the session's shardgate.target when it sets none
	// (replicas.go).
	defaultTarget string
	// readOnlyTarget is where its READ ONLY transactions go
	// (proxy.reads.read_only_transactions, replicas.go).
	readOnlyTarget string
	// anyHost: the statement running reads no rows, and may use the
	// primary under shardgate.target = replica when no standby can serve.
	anyHost bool
	seqs    roleSeqs // seqpriv.go
	// lookupGrants: whether the role may read a lookup table (gsisvc.go).
	lookupGrants map[string]bool
}

func (s *Server) serveConn(c net.Conn, refuse error) {
	ss := &session{srv: s, conn: c, sock: c, stopWait: make(chan struct{}, 1), refuse: refuse}
	ss.setIO(s.metrics.Conn(c), c)
	ss.run(c, true)
}

// run serves the session until it ends or parks: a parked session has no
// goroutine until its client sends (clientwait), then it is run again.
func (ss *session) run(c net.Conn, first bool) {
	s, parked := ss.srv, false
	defer func() {
		if r := recover(); r != nil {
			if panicHook != nil {
				panicHook(r)
			}
			s.log.Error("session panic", "panic", r)
			_ = ss.sendError(sqlerr.New("XX000", "internal error in shardgate: %v", r))
			_ = ss.out.Flush()
		} else if parked {
			s.idle.Park(&ss.wait, ss.raw, func() { ss.run(c, false) })
			return // the session is another goroutine's from now on
		}
		ss.cleanup()
		ss.rd.Close()
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	if !first {
		ss.setOut(pgwire.GetClientWriter(ss.conn))
	} else {
		// Start-up and authentication must end within AuthTimeout, so a client
		// that says nothing (or stops half-way) does not hold a connection;
		// the start-up packet within the shorter StartupTimeout (limits.go).
		ss.authDeadline = time.Now().Add(s.cfg.AuthTimeout)
		_ = c.SetDeadline(s.startupDeadline(ss.authDeadline))
		if err := ss.handshake(); err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				// As Postgres's authentication_timeout: closed without a reply.
				s.log.Info("client start-up timed out", "remote", c.RemoteAddr().String(), "user", ss.user, "timeout", s.cfg.AuthTimeout)
			case !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errQuietClose):
				_ = ss.sendFatal(err)
			}
			return
		}
	}
	parked = ss.loop()
}

// panicHook lets tests (the fuzzer) see a panic the session recovered.
var panicHook func(any)

var errQuietClose = errors.New("connection closed without reply")

func (ss *session) setIO(c, raw net.Conn) {
	ss.conn, ss.raw = c, clientwait.Socket(raw)
	ss.wait.SetConn(c)
	if ss.rd != nil {
		ss.rd.Close()
	}
	ss.rd = pgwire.NewClientReader(c, ss.beforeRead)
	ss.srv.limitReader(ss.rd) // limits.go
	ss.setOut(pgwire.GetClientWriter(c))
}

// setOut makes w (nil while parked) the writer of the session, its encoder
// and the merges' client that suspended portals and cursors hold.
func (ss *session) setOut(w *bufio.Writer) {
	ss.out = w
	ss.enc.Reset(w)
	if ss.wc != nil {
		ss.wc.Out = w
	}
}

func (ss *session) send(msg pgwire.Encodable) error { return ss.enc.Send(msg) }

// reportParameter passes on a parameter a backend reported, when its value
// is news to the client.
func (ss *session) reportParameter(ps *pgproto3.ParameterStatus) {
	if ss.params[ps.Name] != ps.Value {
		ss.params = sessionstate.WithParam(ss.params, ps.Name, ps.Value) // it may be shared
		_ = ss.send(ps)
	}
}

func (ss *session) sendFlush(msg pgwire.Encodable) error {
	if err := ss.enc.Send(msg); err != nil {
		return err
	}
	return ss.out.Flush()
}

// handshake runs the startup phase: SSL/GSS negotiation, StartupMessage,
// authentication, parameter reporting and BackendKeyData.
func (ss *session) handshake() error {
	sawSSL := false
	for {
		msg, err := ss.rd.ReceiveStartupMessage()
		if err != nil {
			if strings.Contains(err.Error(), "version number") {
				return sqlerr.New("0A000", "unsupported frontend protocol: shardgate speaks protocol 3.0")
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return err
			}
			return sqlerr.New("08P01", "invalid startup packet: %v", err)
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if sawSSL {
				return sqlerr.New("08P01", "SSLRequest sent twice")
			}
			sawSSL = true
			if ss.srv.cfg.TLS == nil {
				if _, err := ss.conn.Write([]byte{'N'}); err != nil {
					return err
				}
				continue
			}
			if _, err := ss.conn.Write([]byte{'S'}); err != nil {
				return err
			}
			tc := tls.Server(ss.conn, ss.srv.cfg.TLS)
			if err := tc.Handshake(); err != nil {
				return errQuietClose
			}
			ss.setIO(tc, nil)
		case *pgproto3.GSSEncRequest:
			if _, err := ss.conn.Write([]byte{'N'}); err != nil {
				return err
			}
		case *pgproto3.CancelRequest:
			ss.srv.cancel(m.ProcessID, m.SecretKey)
			return errQuietClose
		case *pgproto3.StartupMessage:
			if err := ss.admit(); err != nil { // limits.go
				return err
			}
			return ss.startupMessage(m)
		default:
			return sqlerr.New("08P01", "unexpected startup message %T", msg)
		}
	}
}

func (ss *session) startupMessage(m *pgproto3.StartupMessage) error {
	if m.ProtocolVersion != pgproto3.ProtocolVersion30 {
		// 3.2 clients are told we speak 3.0 (protocol.html, NegotiateProtocolVersion).
		if err := ss.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0}); err != nil {
			return err
		}
	}
	var err error
	ss.user, ss.database, ss.startup, ss.settings, err = sessionstate.Startup(m.Parameters, ss.srv.live.Load().queryTimeout)
	if err != nil {
		return err
	}
	ss.startup = ss.srv.startups.Share(ss.startup) // read only from here on
	ss.recomputeSettingsKey()
	proof, err := ss.srv.auth.Load().Login(authConn{ss}, ss.user)
	if err != nil {
		return err
	}
	ss.login = ss.srv.backendLogin(ss.user, proof)
	if ss.database == admin.Database {
		return ss.serveAdmin()
	}
	if err := ss.checkTargetSettings(); err != nil {
		return err
	}
	ss.setDefaultTarget(ss.srv.cur.Load().topo)
	// Postgres checks the role (above, for trust) and then the database.
	if db := ss.srv.cur.Load().database; ss.database != db {
		return sqlerr.New("3D000", "database %q does not exist", ss.database)
	}
	// Authenticated: the client's deadline ends here.
	if err := ss.conn.SetDeadline(time.Time{}); err != nil {
		return err
	}
	if err := ss.send(&pgproto3.AuthenticationOk{}); err != nil {
		return err
	}
	// Report parameters the way the main backend sees them under this
	// session's settings: that also validates the startup parameters.
	params, err := ss.startupParams() // startparams.go
	if err != nil {
		return err
	}
	ss.params = ss.srv.params.Share(params)
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if err := ss.send(&pgproto3.ParameterStatus{Name: k, Value: params[k]}); err != nil {
			return err
		}
	}
	ss.srv.registerSession(ss)
	// stmts, portals and cursors are made by their first entry (put): an
	// idle client that never prepared holds none.
	ss.suspended, ss.mcursors = merge.Suspended{}, merge.Cursors{}
	ss.held = map[string]*backend.Conn{}
	ss.listening = sessionstate.Channels{}
	if err := ss.send(&pgproto3.BackendKeyData{ProcessID: ss.pid, SecretKey: ss.secret}); err != nil {
		return err
	}
	return ss.sendFlush(&pgproto3.ReadyForQuery{TxStatus: 'I'})
}

// put sets (*m)[k] to v, making the map first if there is none.
func put[M ~map[K]V, K comparable, V any](m *M, k K, v V) {
	if *m == nil {
		*m = M{}
	}
	(*m)[k] = v
}

// authConn is the session as package auth's transport.
type authConn struct{ ss *session }

func (c authConn) Send(msg pgproto3.BackendMessage) error { return c.ss.sendFlush(msg) }

func (c authConn) Receive(authType uint32) (pgproto3.FrontendMessage, error) {
	if err := c.ss.rd.SetAuthType(authType); err != nil {
		return nil, err
	}
	return c.ss.rd.Receive()
}

func (ss *session) recomputeSettingsKey() {
	ss.settingsKey = sessionstate.Settings(ss.settings).Key()
}

// settingsSQL is what makes a backend connection carry this session's
// settings, whatever session used it before.
func (ss *session) settingsSQL() string {
	return sessionstate.Settings(ss.settings).ReplaySQL()
}

// probeParams leases a main-group connection, applies the session settings
// and returns the server's parameters as this session will see them.
func (ss *session) probeParams() (map[string]string, error) {
	r := ss.srv.cur.Load()
	mainCluster := r.vs.Main().Clusters[0]
	ss.anyHost = true // reads no rows: a standby if the target asks and one can, else the primary
	b, err := ss.acquire(r, mainCluster)
	if err != nil {
		return nil, err
	}
	defer ss.releaseConn(b)
	out := maps.Clone(b.Params)
	if b.SettingsKey != ss.settingsKey {
		if err := b.SimpleExec(ss.settingsSQL(), out); err != nil {
			b.SettingsKey = ""
			return nil, err
		}
		b.SettingsKey = ss.settingsKey
	}
	maps.Copy(out, b.Params)
	return out, nil
}

func (ss *session) cleanup() {
	if ss.ext != nil { // a batch its client left mid-way
		ss.srv.cfg.Gate.Leave(ss.ext.gateSeq)
	}
	ss.suspended.EndAll(true)
	for name := range ss.stmts {
		ss.dropStmt(name)
	}
	if ss.pid != 0 {
		ss.srv.unregisterSession(ss)
	}
	// Connections of an unsynced batch are in an unknown protocol state
	// (work not yet synced, rows not yet read): closed, never reused, so
	// their backends roll back.
	for _, b := range ss.batchOrder {
		b.Broken = true
		if !ss.inTx(b) {
			ss.releaseConn(b)
		}
	}
	ss.batchOrder, ss.batchConns = nil, nil
	if ss.tx != nil {
		ss.abortTx()
	}
	for _, b := range ss.held {
		// Session mode or a pinned session: give connections back clean,
		// as pgbouncer's server_reset_query does.
		if b.TxStatus != 'I' && !b.Broken {
			_ = b.SimpleExec("ROLLBACK", nil)
		}
		if !b.Broken {
			_ = b.SimpleExec("DISCARD ALL", nil)
			b.Prepared = map[string]string{}
			b.SettingsKey = ""
		}
		b.Release()
	}
	ss.held = nil
}

func (ss *session) setRunning(conns []*backend.Conn) {
	if slices.Equal(ss.running, conns) { // only this goroutine writes it
		return
	}
	ss.runMu.Lock()
	ss.running = append(ss.running[:0], conns...)
	ss.runMu.Unlock()
}

// loop reads client messages until Terminate or a broken connection, or
// until the session parks (parked). Simple queries run at once;
// extended-protocol messages are buffered until Sync or Flush and then run
// as one batch.
func (ss *session) loop() (parked bool) {
	for {
		boundary := len(ss.extMsgs) == 0 && ss.ext == nil
		if boundary {
			if err := ss.out.Flush(); err != nil {
				return
			}
		}
		if ss.drainBeforeRead(boundary) {
			return
		}
		msg, err := ss.receive(boundary)
		if err == clientwait.ErrParked {
			return true
		}
		if ss.drainAfterRead(err) {
			return
		}
		if ss.parking {
			continue
		}
		if err != nil {
			if ss.refuseBuffered(err) { // limits.go
				return
			}
			var tooBig *pgproto3.ExceededMaxBodyLenErr
			if errors.As(err, &tooBig) {
				_ = ss.sendFatal(sqlerr.New("54000", "message of %d bytes exceeds the limit of %d bytes", tooBig.ActualBodyLen, tooBig.MaxExpectedBodyLen))
				return
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !pgwire.IsClosedConn(err) {
				_ = ss.sendFatal(sqlerr.New("08P01", "invalid frontend message: %v", err))
			}
			return
		}
		switch m := msg.(type) {
		case *pgproto3.Terminate:
			return
		case *pgproto3.Query:
			if len(ss.extMsgs) > 0 || ss.ext != nil {
				// A Query in the middle of an unsynced batch: run what came
				// before first, as Postgres would.
				ss.runBatch(false)
			}
			ss.simpleQuery(m.String)
		case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close:
			ss.extMsgs = append(ss.extMsgs, ss.extStore().copier.Copy(msg))
		case *pgproto3.Sync:
			ss.runBatch(true)
		case *pgproto3.Flush:
			ss.runBatch(false)
		case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
			// Outside COPY these are ignored, as Postgres does.
		case *pgproto3.FunctionCall:
			_ = ss.sendError(sqlerr.New("0A000", "the function call protocol message is not supported by shardgate"))
			_ = ss.send(&pgproto3.ReadyForQuery{TxStatus: ss.txStatus()})
		default:
			_ = ss.sendFatal(sqlerr.New("08P01", "unexpected message %T", msg))
			return
		}
		if ss.conn == nil {
			return
		}
	}
}

func (ss *session) txStatus() byte {
	switch {
	case ss.tx == nil || ss.tx.implicit:
		return 'I'
	case ss.tx.failed:
		return 'E'
	default:
		return 'T'
	}
}

// sendError writes an ErrorResponse for err: backend errors with every field
// intact plus where they came from; proxy errors with their SQLSTATE.
func (ss *session) sendError(err error) error {
	ss.srv.metrics.Error(sqlerr.Code(err))
	if ss.wait.Killed() {
		_ = ss.endKilled() // terminate.go
		return nil
	}
	return ss.send(pgwire.ErrorResponse(err, "ERROR"))
}

func (ss *session) sendFatal(err error) error {
	if err := ss.send(pgwire.ErrorResponse(err, "FATAL")); err != nil {
		return err
	}
	return ss.out.Flush()
}

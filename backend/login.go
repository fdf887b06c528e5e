package backend

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/sqlerr"
)

// Who a pool's connections log in as.
//
// A pool made by NewPool logs in with its DSN's user and password: the
// proxy's service identity. A pool given a Login logs in as a client's
// role instead, so Postgres checks that role's privileges, row-level
// security and ownership on every cluster. The Login says how the proxy
// proves it is that role:
//
//   - Password: a plain-text password, answered by pgconn to whatever the
//     cluster asks (SCRAM, md5, cleartext);
//   - SCRAM: SCRAM pass-through (RFC 5802 §3). The proxy never holds the
//     password: it has the ClientKey it recovered from the client's own
//     SCRAM proof to the proxy, and the ServerKey of the role's verifier.
//     With those it answers a cluster's SCRAM exchange, but only if the
//     cluster's verifier has the same salt and iteration count, which the
//     cluster's server-first-message tells: another salt is refused with
//     28000 naming the cluster, before any proof is sent;
//   - neither: no password at all, which only a cluster that trusts the
//     proxy's address accepts (local demos).

// Login is the role a pool's connections log in as.
type Login struct {
	// User is the role. "" keeps the DSN's user and password.
	User string
	// Password is the role's plain-text password ("" if unknown).
	Password string
	// SCRAM are the keys of SCRAM pass-through (nil if unknown); used when
	// Password is empty.
	SCRAM *SCRAMKeys
}

// SCRAMKeys are what SCRAM pass-through needs of a role's verifier and
// of its client's proof.
type SCRAMKeys struct {
	Salt      []byte
	Iters     int
	ClientKey []byte // ClientProof XOR ClientSignature of the client's login
	ServerKey []byte // from the verifier, to check the cluster's signature
}

// Equal reports whether two logins prove the same thing the same way.
func (l Login) Equal(o Login) bool {
	if l.User != o.User || l.Password != o.Password || (l.SCRAM == nil) != (o.SCRAM == nil) {
		return false
	}
	if l.SCRAM == nil {
		return true
	}
	a, b := l.SCRAM, o.SCRAM
	return a.Iters == b.Iters && bytes.Equal(a.Salt, b.Salt) && bytes.Equal(a.ClientKey, b.ClientKey) && bytes.Equal(a.ServerKey, b.ServerKey)
}

// configure sets cfg up to log in as l.
func (l Login) configure(cfg *pgconn.Config) {
	if l.User == "" {
		return
	}
	cfg.User, cfg.Password = l.User, l.Password
	if l.Password != "" {
		return
	}
	// Without a password the start-up is the proxy's own (SCRAM keys, or
	// nothing at all: a cluster that asks for a password is refused with
	// 28000 for the role, not taken for unreachable).
	prev, keys := cfg.AfterNetConnect, l.SCRAM
	cfg.AfterNetConnect = func(ctx context.Context, c *pgconn.Config, conn net.Conn) (net.Conn, error) {
		// On an error the connection is returned too: pgconn closes it.
		if prev != nil {
			next, err := prev(ctx, c, conn)
			if err != nil {
				return conn, err
			}
			conn = next
		}
		logged, err := passThrough(ctx, c, conn, keys)
		if err != nil {
			return conn, err
		}
		return logged, nil
	}
}

// passThrough runs the start-up and authentication on conn itself, with
// SCRAM pass-through, and returns a connection on which pgconn's own
// start-up finds the cluster's AuthenticationOk at once: its
// StartupMessage is dropped and an AuthenticationOk is the first thing it
// reads, followed by the cluster's ParameterStatus, BackendKeyData and
// ReadyForQuery.
func passThrough(ctx context.Context, cfg *pgconn.Config, conn net.Conn, keys *SCRAMKeys) (net.Conn, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
		defer conn.SetDeadline(time.Time{})
	}
	params := maps.Clone(cfg.RuntimeParams)
	if params == nil {
		params = map[string]string{}
	}
	params["user"] = cfg.User
	if cfg.Database != "" {
		params["database"] = cfg.Database
	}
	m := &rawConn{c: conn}
	if err := m.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: params}); err != nil {
		return nil, err
	}
	for {
		typ, body, err := m.receive()
		if err != nil {
			return nil, err
		}
		if typ == 'E' {
			return nil, errorResponse(body)
		}
		if typ != 'R' || len(body) < 4 {
			return nil, fmt.Errorf("unexpected message %q during authentication", typ)
		}
		switch binary.BigEndian.Uint32(body) {
		case pgproto3.AuthTypeOk:
			return &loggedIn{Conn: conn, injected: []byte{'R', 0, 0, 0, 8, 0, 0, 0, 0}}, nil
		case pgproto3.AuthTypeSASL:
			var sasl pgproto3.AuthenticationSASL
			if err := sasl.Decode(body); err != nil {
				return nil, err
			}
			if keys == nil {
				return nil, noSecret(cfg.User)
			}
			if !containsMech(sasl.AuthMechanisms, "SCRAM-SHA-256") {
				return nil, sqlerr.New("28000", "role %q: the cluster offers %s, not SCRAM-SHA-256, for SCRAM pass-through", cfg.User, strings.Join(sasl.AuthMechanisms, ", "))
			}
			if err := scramClient(m, cfg.User, keys); err != nil {
				return nil, err
			}
		default:
			if keys == nil {
				return nil, noSecret(cfg.User)
			}
			return nil, sqlerr.New("28000", "role %q: the cluster asks for a password (authentication request %d), which SCRAM pass-through cannot answer", cfg.User, binary.BigEndian.Uint32(body)).
				WithHint("Use scram-sha-256 in the cluster's pg_hba.conf, or set proxy.auth.users.%s.server_password.", cfg.User)
		}
	}
}

// noSecret is the error of a cluster asking for a password the proxy
// does not have for the role.
func noSecret(user string) error {
	return sqlerr.New("28000", "role %q: the cluster asks for a password, and the proxy has none for the role", user).
		WithHint("Log in to the proxy with scram-sha-256 (SCRAM pass-through), or set proxy.auth.users.%s.server_password (docs/sessions.md).", user)
}

func containsMech(ms []string, m string) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// scramClient answers a SCRAM-SHA-256 exchange (RFC 5802 §3) with the
// ClientKey: ClientProof = ClientKey XOR HMAC(H(ClientKey), AuthMessage).
func scramClient(m *rawConn, user string, keys *SCRAMKeys) error {
	nonce := make([]byte, 18)
	if _, err := io.ReadFull(rand.Reader, nonce); err != nil {
		return err
	}
	clientNonce := base64.RawStdEncoding.EncodeToString(nonce)
	clientFirstBare := "n=,r=" + clientNonce
	if err := m.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,," + clientFirstBare)}); err != nil {
		return err
	}
	serverFirst, err := m.saslStep(pgproto3.AuthTypeSASLContinue)
	if err != nil {
		return err
	}
	attrs := scramAttrs(serverFirst)
	salt, err := base64.StdEncoding.DecodeString(attrs["s"])
	iters, ierr := strconv.Atoi(attrs["i"])
	if err != nil || ierr != nil || !strings.HasPrefix(attrs["r"], clientNonce) {
		return errors.New("malformed SCRAM server-first-message")
	}
	if !bytes.Equal(salt, keys.Salt) || iters != keys.Iters {
		return sqlerr.New("28000", "role %q: its SCRAM verifier on this cluster differs from the one the client logged in with (salt or iteration count), so SCRAM pass-through cannot log in", user).
			WithDetail("SCRAM pass-through needs the same verifier (pg_authid.rolpassword) for the role on every cluster.").
			WithHint("Set the role's password on every cluster from main's verifier (ALTER ROLE %s PASSWORD 'SCRAM-SHA-256$...'), or set proxy.auth.users.%s.server_password.", user, user)
	}
	clientFinalBare := "c=biws,r=" + attrs["r"]
	authMessage := []byte(clientFirstBare + "," + string(serverFirst) + "," + clientFinalBare)
	stored := sha256.Sum256(keys.ClientKey)
	sig := hmacSHA256(stored[:], authMessage)
	proof := make([]byte, len(sig))
	for i := range sig {
		proof[i] = keys.ClientKey[i] ^ sig[i]
	}
	final := clientFinalBare + ",p=" + base64.StdEncoding.EncodeToString(proof)
	if err := m.send(&pgproto3.SASLResponse{Data: []byte(final)}); err != nil {
		return err
	}
	serverFinal, err := m.saslStep(pgproto3.AuthTypeSASLFinal)
	if err != nil {
		return err
	}
	v, err := base64.StdEncoding.DecodeString(scramAttrs(serverFinal)["v"])
	if err != nil || subtle.ConstantTimeCompare(v, hmacSHA256(keys.ServerKey, authMessage)) != 1 {
		return sqlerr.New("28000", "role %q: the cluster's SCRAM server signature does not match the role's verifier", user)
	}
	return nil
}

func hmacSHA256(key, msg []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(msg)
	return h.Sum(nil)
}

// scramAttrs reads the k=v attributes of a SCRAM message.
func scramAttrs(msg []byte) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(string(msg), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// rawConn reads and writes start-up messages on a connection without
// buffering beyond the message read, so what follows stays for pgconn.
type rawConn struct{ c net.Conn }

func (m *rawConn) send(msg pgproto3.FrontendMessage) error {
	buf, err := msg.Encode(nil)
	if err != nil {
		return err
	}
	_, err = m.c.Write(buf)
	return err
}

func (m *rawConn) receive() (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(m.c, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:])) - 4
	if n < 0 || n > 1<<16 {
		return 0, nil, fmt.Errorf("invalid message length %d during authentication", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(m.c, body); err != nil {
		return 0, nil, err
	}
	return hdr[0], body, nil
}

// saslStep reads the AuthenticationSASLContinue or ...Final (want) and
// returns its data.
func (m *rawConn) saslStep(want uint32) ([]byte, error) {
	typ, body, err := m.receive()
	if err != nil {
		return nil, err
	}
	if typ == 'E' {
		return nil, errorResponse(body)
	}
	if typ != 'R' || len(body) < 4 || binary.BigEndian.Uint32(body) != want {
		return nil, fmt.Errorf("unexpected message %q during SCRAM authentication", typ)
	}
	return body[4:], nil
}

func errorResponse(body []byte) error {
	var er pgproto3.ErrorResponse
	if err := er.Decode(body); err != nil {
		return err
	}
	return pgconn.ErrorResponseToPgError(&er)
}

// loggedIn is a connection already authenticated: the StartupMessage
// pgconn writes on it is dropped, and it first reads injected.
type loggedIn struct {
	net.Conn
	mu       sync.Mutex
	skip     int  // bytes of pgconn's StartupMessage still to drop
	started  bool // the StartupMessage's length was seen
	lenBuf   []byte
	injected []byte
}

func (c *loggedIn) Write(p []byte) (int, error) {
	c.mu.Lock()
	n := 0
	for !c.started && len(p) > 0 {
		c.lenBuf = append(c.lenBuf, p[0])
		p, n = p[1:], n+1
		if len(c.lenBuf) == 4 {
			c.started, c.skip = true, int(binary.BigEndian.Uint32(c.lenBuf))-4
		}
	}
	if c.skip > 0 {
		k := min(c.skip, len(p))
		c.skip -= k
		p, n = p[k:], n+k
	}
	c.mu.Unlock()
	if len(p) == 0 {
		return n, nil
	}
	m, err := c.Conn.Write(p)
	return n + m, err
}

func (c *loggedIn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if len(c.injected) > 0 {
		n := copy(p, c.injected)
		c.injected = c.injected[n:]
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	return c.Conn.Read(p)
}

// unwrapLogin is the connection under a loggedIn whose start-up is over
// (the backend's liveness peek needs the socket itself).
func unwrapLogin(c net.Conn) net.Conn {
	if l, ok := c.(*loggedIn); ok {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.started && l.skip == 0 && len(l.injected) == 0 {
			return l.Conn
		}
	}
	return c
}

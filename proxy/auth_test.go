package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"

	"github.com/shardgate/shardgate/auth"
)

// dsnAs is the proxy's DSN with another user:password and database.
func (p *testProxy) dsnAs(userinfo, db string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&connect_timeout=10", userinfo, p.addr, db)
}

func withAuth(m auth.Method, users ...auth.User) func(*Config) {
	return func(cfg *Config) {
		cfg.AuthMethod = m
		cfg.Users = users
	}
}

func TestAuthMethods(t *testing.T) {
	verifier, err := auth.NewSCRAMVerifier("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method   auth.Method
		password string // as configured
	}{
		{auth.MD5, "s3cret"},
		{auth.MD5, "md5" + mustMD5("s3cret"+"app")},
		{auth.MD5, verifier}, // switched to SCRAM, as Postgres does
		{auth.SCRAM, "s3cret"},
		{auth.SCRAM, verifier},
	}
	for _, c := range cases {
		name := string(c.method) + "/" + c.password[:min(len(c.password), 8)]
		t.Run(name, func(t *testing.T) {
			p := startProxy(t, shopTopology(""), withAuth(c.method, auth.User{Name: "app", Password: c.password}))
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, p.dsnAs("app:s3cret", "shop"))
			if err != nil {
				t.Fatalf("good password: %v", err)
			}
			var one int
			if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatal(err)
			}
			conn.Close(ctx)
			if _, err := pgx.Connect(ctx, p.dsnAs("app:wrong", "shop")); sqlstate(err) != "28P01" {
				t.Fatalf("wrong password: want 28P01, got %v", err)
			}
			if _, err := pgx.Connect(ctx, p.dsnAs("nobody:s3cret", "shop")); sqlstate(err) != "28P01" {
				t.Fatalf("unknown user: want 28P01, got %v", err)
			}
		})
	}
}

// TestStartupRoleAndDatabase: the proxy serves one database name and, when
// users are listed, only those users, with Postgres's errors (role before
// database, authentication before both). Before, any user name and any
// database name were served as the backend's user and database.
func TestStartupRoleAndDatabase(t *testing.T) {
	open := startProxy(t, shopTopology(""), nil)
	listed := startProxy(t, shopTopology(""), withAuth(auth.Trust, auth.User{Name: "app", Password: "x"}))
	scrammed := startProxy(t, shopTopology(""), withAuth(auth.SCRAM, auth.User{Name: "app", Password: "s3cret"}))
	named := startProxy(t, shopTopology(""), func(cfg *Config) { cfg.Database = "storefront" })
	type want struct{ code, message string }
	noRole := want{"28000", `role "nobody" does not exist`}
	noDB := want{"3D000", `database "no_such_db" does not exist`}
	failed := func(user string) want {
		return want{"28P01", fmt.Sprintf("password authentication failed for user %q", user)}
	}
	for _, tc := range []struct {
		name     string
		p        *testProxy
		userinfo string
		db       string
		want     want
	}{
		{"trust/app@shop", open, "app", "shop", want{}},
		{"trust/nobody@shop", open, "nobody", "shop", want{}},
		{"trust/app@no_such_db", open, "app", "no_such_db", noDB},
		{"trust/nobody@no_such_db", open, "nobody", "no_such_db", noDB},
		{"trust/app@Shop", open, "app", "Shop", want{"3D000", `database "Shop" does not exist`}},
		{"listed/app@shop", listed, "app", "shop", want{}},
		{"listed/nobody@shop", listed, "nobody", "shop", noRole},
		{"listed/nobody@no_such_db", listed, "nobody", "no_such_db", noRole},
		{"listed/app@no_such_db", listed, "app", "no_such_db", noDB},
		{"scram/app@shop", scrammed, "app:s3cret", "shop", want{}},
		{"scram/app@no_such_db", scrammed, "app:s3cret", "no_such_db", noDB},
		{"scram/app:wrong@no_such_db", scrammed, "app:wrong", "no_such_db", failed("app")},
		{"scram/nobody@no_such_db", scrammed, "nobody:s3cret", "no_such_db", failed("nobody")},
		{"named/app@storefront", named, "app", "storefront", want{}},
		{"named/app@shop", named, "app", "shop", want{"3D000", `database "shop" does not exist`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, tc.p.dsnAs(tc.userinfo, tc.db))
			if tc.want.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				var db string
				if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != "shop" {
					t.Fatalf("current_database() = %q, %v", db, err)
				}
				return
			}
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("want %s, got %v", tc.want.code, err)
			}
			if got := (want{pe.Code, pe.Message}); got != tc.want || pe.Severity != "FATAL" {
				t.Fatalf("got %s %+v, want %+v", pe.Severity, got, tc.want)
			}
		})
	}
}

// rawConn is a client that speaks the protocol by hand.
type rawConn struct {
	net.Conn
	fe *pgproto3.Frontend
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{Conn: c, fe: pgproto3.NewFrontend(c, c)}
}

func (r *rawConn) send(t *testing.T, m pgproto3.FrontendMessage) {
	t.Helper()
	r.fe.Send(m)
	if err := r.fe.Flush(); err != nil {
		t.Fatalf("send %T: %v", m, err)
	}
}

func (r *rawConn) startup(t *testing.T, user string) {
	r.send(t, &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": user, "database": "shop"}})
}

// scramTranscript runs a SCRAM exchange with a wrong password by hand and
// returns what the proxy sent: message types, the server-first-message's
// salt and iteration count, and the final error with the user name blanked.
func scramTranscript(t *testing.T, addr, user string) []string {
	r := dialRaw(t, addr)
	r.startup(t, user)
	client, err := scram.SHA256.NewClient("", "not the password", "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	var out []string
	for {
		msg, err := r.fe.Receive()
		if err != nil {
			t.Fatalf("%s: %v after %q", user, err, out)
		}
		out = append(out, fmt.Sprintf("%T", msg))
		switch m := msg.(type) {
		case *pgproto3.AuthenticationSASL:
			out = append(out, strings.Join(m.AuthMechanisms, " "))
			first, _ := conv.Step("")
			r.send(t, &pgproto3.SASLInitialResponse{AuthMechanism: m.AuthMechanisms[0], Data: []byte(first)})
		case *pgproto3.AuthenticationSASLContinue:
			_, saltIters, _ := strings.Cut(string(m.Data), ",")
			out = append(out, saltIters)
			final, err := conv.Step(string(m.Data))
			if err != nil {
				t.Fatal(err)
			}
			r.send(t, &pgproto3.SASLResponse{Data: []byte(final)})
		case *pgproto3.ErrorResponse:
			out = append(out, m.Severity, m.Code, strings.ReplaceAll(m.Message, user, "USER"))
			if _, err := r.fe.Receive(); err == nil {
				t.Errorf("%s: connection still open after the error", user)
			}
			return out
		default:
			t.Fatalf("%s: unexpected %T after %q", user, msg, out)
		}
	}
}

// TestSCRAMUnknownUserMock: an unknown user goes through the whole SCRAM
// exchange (the same messages, a stable salt of the same shape) and fails
// with the same error as a wrong password. Before, an unknown user got the
// error at once, without AuthenticationSASL, which told it apart.
func TestSCRAMUnknownUserMock(t *testing.T) {
	verifier, err := auth.NewSCRAMVerifier("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, shopTopology(""), withAuth(auth.SCRAM, auth.User{Name: "app", Password: verifier}))
	wrong := scramTranscript(t, p.addr, "app")
	if len(wrong) != 8 || wrong[6] != "28P01" {
		t.Fatalf("wrong password: %q", wrong)
	}
	saltShape := func(tr []string) string {
		salt, iters, _ := strings.Cut(strings.TrimPrefix(tr[3], "s="), ",")
		raw, err := base64.StdEncoding.DecodeString(salt)
		if err != nil {
			t.Fatalf("salt %q: %v", salt, err)
		}
		return fmt.Sprintf("%d-byte salt, %s", len(raw), iters)
	}
	mock := scramTranscript(t, p.addr, "nobody")
	again := scramTranscript(t, p.addr, "nobody")
	if mock[3] != again[3] {
		t.Errorf("the mock salt changes between attempts: %s / %s", mock[3], again[3])
	}
	if saltShape(mock) != saltShape(wrong) {
		t.Errorf("mock %s, real user %s", saltShape(mock), saltShape(wrong))
	}
	mock[3] = wrong[3]
	if !reflect.DeepEqual(mock, wrong) {
		t.Errorf("unknown user saw\n%q\nwrong password saw\n%q", mock, wrong)
	}
}

// TestAuthTimeout: a client that sends nothing, and one that stops in the
// middle of SCRAM, are disconnected after proxy.timeouts.auth; a client
// that authenticated is not, however long it stays idle, and new clients
// are served meanwhile.
func TestAuthTimeout(t *testing.T) {
	const timeout = time.Second
	p := startProxy(t, shopTopology(""), func(cfg *Config) {
		withAuth(auth.SCRAM, auth.User{Name: "app", Password: "s3cret"})(cfg)
		cfg.AuthTimeout = timeout
	})
	ctx := context.Background()
	before := connect(t, p.dsnAs("app:s3cret", "shop"))

	start := time.Now()
	silent := dialRaw(t, p.addr)
	midSCRAM := dialRaw(t, p.addr)
	midSCRAM.startup(t, "app")
	if _, err := midSCRAM.fe.Receive(); err != nil {
		t.Fatal(err)
	}
	client, _ := scram.SHA256.NewClient("", "s3cret", "")
	first, _ := client.NewConversation().Step("")
	midSCRAM.send(t, &pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte(first)})
	if msg, err := midSCRAM.fe.Receive(); err != nil {
		t.Fatalf("server-first-message: %T %v", msg, err)
	}
	// ... and the client says no more.

	closed := make(chan string, 2)
	for name, r := range map[string]*rawConn{"silent": silent, "mid-SCRAM": midSCRAM} {
		go func() {
			n, err := io.Copy(io.Discard, r.Conn)
			if err != nil {
				closed <- fmt.Sprintf("%s: read error %v (want EOF)", name, err)
				return
			}
			closed <- fmt.Sprintf("%s: closed after %s (%d more bytes)", name, time.Since(start).Round(10*time.Millisecond), n)
		}()
	}
	// While they hang, other clients connect and work.
	during := connect(t, p.dsnAs("app:s3cret", "shop"))
	var one int
	if err := during.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case s := <-closed:
			t.Log(s)
			if !strings.Contains(s, "closed after") || strings.Contains(s, "more bytes") && !strings.Contains(s, "(0 more bytes)") {
				t.Error(s)
			}
		case <-time.After(timeout + 5*time.Second):
			t.Fatal("a client that stopped during start-up is still connected")
		}
	}
	if elapsed := time.Since(start); elapsed < timeout {
		t.Fatalf("closed after %s, before the %s timeout", elapsed, timeout)
	}
	// Authenticated sessions outlive the start-up deadline.
	time.Sleep(timeout)
	for _, c := range []*pgx.Conn{before, during} {
		if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatalf("authenticated session after the start-up timeout: %v", err)
		}
	}
}

// testPKI is a CA and a server certificate it signed for 127.0.0.1 and
// localhost.
type testPKI struct {
	caFile string
	server tls.Certificate
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "shardgate test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "shardgate"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return testPKI{caFile: caFile, server: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}}
}

// TestTLS: sslmode=verify-full against a certificate of a test CA, with
// SCRAM over it (pgx then sends the "y" channel-binding flag); TLS below
// 1.2 is refused even when the configuration asks for TLS 1.0; without TLS
// configured, sslmode=require is refused.
func TestTLS(t *testing.T) {
	pki := newTestPKI(t)
	p := startProxy(t, shopTopology(""), func(cfg *Config) {
		withAuth(auth.SCRAM, auth.User{Name: "app", Password: "s3cret"})(cfg)
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{pki.server}, MinVersion: tls.VersionTLS10}
	})
	ctx := context.Background()
	_, port, _ := net.SplitHostPort(p.addr)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		dsn := fmt.Sprintf("postgres://app:s3cret@%s:%s/shop?sslmode=verify-full&sslrootcert=%s&connect_timeout=10", host, port, pki.caFile)
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("verify-full to %s: %v", host, err)
		}
		tc, ok := conn.PgConn().Conn().(*tls.Conn)
		if !ok {
			t.Fatalf("connection is not TLS: %T", conn.PgConn().Conn())
		}
		if v := tc.ConnectionState().Version; v < tls.VersionTLS12 {
			t.Fatalf("TLS version %x", v)
		}
		var one int
		if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
	}
	// A CA that did not sign the certificate: verify-full fails.
	other := newTestPKI(t)
	if _, err := pgx.Connect(ctx, fmt.Sprintf("postgres://app:s3cret@%s/shop?sslmode=verify-full&sslrootcert=%s&connect_timeout=10", p.addr, other.caFile)); err == nil {
		t.Fatal("verify-full accepted a certificate of another CA")
	}

	// A client that offers only TLS 1.0 and 1.1 is refused.
	r := dialRaw(t, p.addr)
	r.send(t, &pgproto3.SSLRequest{})
	var answer [1]byte
	if _, err := io.ReadFull(r, answer[:]); err != nil || answer[0] != 'S' {
		t.Fatalf("SSLRequest answered %q, %v", answer[:], err)
	}
	old := tls.Client(r.Conn, &tls.Config{ServerName: "localhost", InsecureSkipVerify: true,
		MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
	if err := old.Handshake(); err == nil {
		t.Fatalf("TLS %x handshake succeeded", old.ConnectionState().Version)
	} else {
		t.Logf("TLS 1.1 client: %v", err)
	}

	// Without TLS configured, sslmode=require is refused by the client
	// because the proxy answers 'N'.
	plain := startProxy(t, shopTopology(""), nil)
	if _, err := pgx.Connect(ctx, strings.Replace(plain.dsn(), "sslmode=disable", "sslmode=require", 1)); err == nil {
		t.Fatal("sslmode=require succeeded against a proxy without TLS")
	}
}

func TestCancel(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := connect(t, p.dsn())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Exec(ctx, "SELECT pg_sleep(20)")
	if err == nil {
		t.Fatal("pg_sleep finished")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("cancel took %s", time.Since(start))
	}
	// pgx closes a connection whose query was interrupted by its context;
	// a fresh one works, and the backend was cancelled (57014 seen by a
	// cancel sent on a second connection).
	c2 := connect(t, p.dsn())
	done := make(chan error, 1)
	go func() {
		_, err := c2.Exec(context.Background(), "SELECT pg_sleep(20)")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if err := c2.PgConn().CancelRequest(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if sqlstate(err) != "57014" {
			t.Fatalf("want 57014, got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not reach the backend")
	}
	var one int
	if err := c2.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}

func TestReload(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	// settings is a main table; after the reload it is a reference table of
	// by_customer, so writes reach both clusters.
	mustExec(t, c, "CREATE TABLE IF NOT EXISTS settings2 (k text PRIMARY KEY, v text)")
	for _, cl := range env.Clusters[1:] {
		if err := cl.Exec(ctx, "shop", "CREATE TABLE IF NOT EXISTS settings2 (k text PRIMARY KEY, v text)"); err != nil {
			t.Fatal(err)
		}
	}
	yaml := strings.Replace(shopTopology(""), "reference: [countries]", "reference: [countries, settings2]", 1)
	topoNew, err := parseTopo(yaml)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.srv.Reload(topoNew); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "INSERT INTO settings2 VALUES ('a', 'b')")
	for _, cl := range env.Clusters {
		if n := count(t, cl.DSN("shop"), "SELECT count(*) FROM settings2"); n != 1 {
			t.Fatalf("%s: %d rows after reload", cl.Name, n)
		}
	}
}

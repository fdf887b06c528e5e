package auth

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"

	"github.com/shardgate/shardgate/sqlerr"
)

// backendConn is the Conn a test server side uses: pgproto3's Backend over
// one end of a pipe.
type backendConn struct{ be *pgproto3.Backend }

func (b backendConn) Send(m pgproto3.BackendMessage) error {
	b.be.Send(m)
	return b.be.Flush()
}

func (b backendConn) Receive(t uint32) (pgproto3.FrontendMessage, error) {
	if err := b.be.SetAuthType(t); err != nil {
		return nil, err
	}
	return b.be.Receive()
}

// exchange runs Authenticate for user against a scripted client and
// returns the server's result. The client gets a Frontend on the other end
// of the pipe; when it returns, its end is closed.
func exchange(t *testing.T, a *Authenticator, user string, client func(fe *pgproto3.Frontend)) error {
	t.Helper()
	return exchangeRaw(t, a, user, func(cc net.Conn) { client(pgproto3.NewFrontend(cc, cc)) })
}

// exchangeRaw is exchange with the client's end of the pipe itself.
func exchangeRaw(t *testing.T, a *Authenticator, user string, client func(cc net.Conn)) error {
	t.Helper()
	sc, cc := net.Pipe()
	_ = sc.SetDeadline(time.Now().Add(10 * time.Second))
	_ = cc.SetDeadline(time.Now().Add(10 * time.Second))
	done := make(chan error, 1)
	go func() {
		defer sc.Close()
		done <- a.Authenticate(backendConn{pgproto3.NewBackend(sc, sc)}, user)
	}()
	client(cc)
	cc.Close()
	return <-done
}

func receive[T pgproto3.BackendMessage](t *testing.T, fe *pgproto3.Frontend) T {
	t.Helper()
	msg, err := fe.Receive()
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	m, ok := msg.(T)
	if !ok {
		var want T
		t.Fatalf("got %T, want %T", msg, want)
	}
	return m
}

func send(t *testing.T, fe *pgproto3.Frontend, m pgproto3.FrontendMessage) {
	t.Helper()
	fe.Send(m)
	if err := fe.Flush(); err != nil {
		t.Fatalf("send %T: %v", m, err)
	}
}

func newAuth(t *testing.T, m Method, users ...User) *Authenticator {
	t.Helper()
	a, err := New(Config{Method: m, Users: users, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func code(err error) string {
	if se, ok := sqlerr.As(err); ok {
		return se.Code
	}
	return fmt.Sprintf("not a sqlerr: %v", err)
}

// TestRFC7677Vector runs the example exchange of RFC 7677 §3 (user "user",
// password "pencil") through Authenticate with the RFC's salt and server
// nonce: every server message must be byte for byte the RFC's.
func TestRFC7677Vector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := storedCredentials("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	a := newAuth(t, SCRAM, User{Name: "user", Password: formatVerifier(cred)})
	a.nonce = func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }
	var final string
	err = exchange(t, a, "user", func(fe *pgproto3.Frontend) {
		sasl := receive[*pgproto3.AuthenticationSASL](t, fe)
		if !reflect.DeepEqual(sasl.AuthMechanisms, []string{"SCRAM-SHA-256"}) {
			t.Errorf("mechanisms %q", sasl.AuthMechanisms)
		}
		send(t, fe, &pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")})
		cont := receive[*pgproto3.AuthenticationSASLContinue](t, fe)
		if got, want := string(cont.Data), "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; got != want {
			t.Errorf("server-first-message\n got %s\nwant %s", got, want)
		}
		send(t, fe, &pgproto3.SASLResponse{Data: []byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")})
		final = string(receive[*pgproto3.AuthenticationSASLFinal](t, fe).Data)
	})
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; final != want {
		t.Fatalf("server-final-message %s, want %s", final, want)
	}
}

// scramClient plays a SCRAM client with password through the exchange;
// edit may change the client-first (step 0) and client-final (step 1)
// messages before they are sent. It stops at the first message that is
// not a SASL continuation.
func scramClient(t *testing.T, password, mech string, edit func(step int, msg string) string) func(fe *pgproto3.Frontend) {
	return func(fe *pgproto3.Frontend) {
		c, err := scram.SHA256.NewClient("", password, "")
		if err != nil {
			t.Fatal(err)
		}
		conv := c.NewConversation()
		if mech == yFlag {
			// A client that can bind but sees no PLUS offered: "y,,".
			conv, mech = c.NewConversationAdvertisingChannelBinding(), mechanism
		}
		receive[*pgproto3.AuthenticationSASL](t, fe)
		first, err := conv.Step("")
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			first = edit(0, first)
		}
		send(t, fe, &pgproto3.SASLInitialResponse{AuthMechanism: mech, Data: []byte(first)})
		msg, err := fe.Receive()
		if err != nil {
			return
		}
		cont, ok := msg.(*pgproto3.AuthenticationSASLContinue)
		if !ok {
			return
		}
		final, err := conv.Step(string(cont.Data))
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			final = edit(1, final)
		}
		send(t, fe, &pgproto3.SASLResponse{Data: []byte(final)})
		_, _ = fe.Receive()
	}
}

// yFlag asks scramClient for a client that sends the "y" GS2 flag.
const yFlag = "y"

// TestSCRAMChecks: each check the server makes refuses a client that
// breaks it, with Postgres's SQLSTATE.
func TestSCRAMChecks(t *testing.T) {
	a := newAuth(t, SCRAM, User{Name: "app", Password: "pencil"})
	replaceAttr := func(step int, attr, val string) func(int, string) string {
		return func(s int, msg string) string {
			if s != step {
				return msg
			}
			parts := strings.Split(msg, ",")
			for i, p := range parts {
				if strings.HasPrefix(p, attr+"=") {
					parts[i] = attr + "=" + val
				}
			}
			return strings.Join(parts, ",")
		}
	}
	tests := []struct {
		name     string
		password string
		mech     string
		edit     func(int, string) string
		want     string
	}{
		{"good", "pencil", mechanism, nil, ""},
		{"wrong password", "pen", mechanism, nil, "28P01"},
		{"y flag", "pencil", yFlag, func(s int, m string) string {
			if s == 1 && !strings.HasPrefix(m, "c=eSws,") { // base64("y,,")
				t.Errorf("client-final-message %s", m)
			}
			return m
		}, ""},
		{"y flag, c= says n", "pencil", yFlag, replaceAttr(1, "c", "biws"), "08P01"},
		{"p flag without PLUS offered", "pencil", mechanism, func(s int, m string) string {
			return strings.Replace(m, "n,,", "p=tls-server-end-point,,", 1)
		}, "08P01"},
		{"PLUS mechanism", "pencil", "SCRAM-SHA-256-PLUS", nil, "08P01"},
		{"c= not the gs2 header", "pencil", mechanism, replaceAttr(1, "c", "eSws"), "08P01"},
		{"c= with binding data", "pencil", mechanism, replaceAttr(1, "c", base64.StdEncoding.EncodeToString([]byte("n,,xyz"))), "08P01"},
		{"nonce without server part", "pencil", mechanism, func(s int, m string) string {
			if s == 1 {
				parts := strings.Split(m, ",")
				parts[1] = parts[1][:len("r=")+24] // the client's nonce alone
				return strings.Join(parts, ",")
			}
			return m
		}, "08P01"},
		{"nonce with other server part", "pencil", mechanism, func(s int, m string) string {
			if s == 1 {
				parts := strings.Split(m, ",")
				parts[1] = parts[1][:len(parts[1])-4] + "AAAA"
				return strings.Join(parts, ",")
			}
			return m
		}, "08P01"},
		{"short proof", "pencil", mechanism, replaceAttr(1, "p", "AAAA"), "08P01"},
		{"authzid", "pencil", mechanism, func(s int, m string) string {
			if s == 0 {
				return strings.Replace(m, "n,,", "n,a=root,", 1)
			}
			return m
		}, "0A000"},
		{"not SCRAM", "pencil", mechanism, func(s int, m string) string { return "hello" }, "08P01"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := exchange(t, a, "app", scramClient(t, tc.password, tc.mech, tc.edit))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want success, got %v", err)
			case tc.want != "" && code(err) != tc.want:
				t.Fatalf("want %s, got %v", tc.want, err)
			}
		})
	}
}

// transcript records what a SCRAM client that sends a wrong password sees,
// with the nonces blanked out.
type transcript struct {
	types      []string
	first      string // server-first-message without its nonce
	code, text string // of the error Authenticate returns
}

func scramTranscript(t *testing.T, a *Authenticator, user string) transcript {
	var tr transcript
	err := exchange(t, a, user, func(fe *pgproto3.Frontend) {
		c, _ := scram.SHA256.NewClient("", "not the password", "")
		conv := c.NewConversation()
		first, _ := conv.Step("")
		for step := 0; ; step++ {
			msg, err := fe.Receive()
			if err != nil {
				return // the server ended the exchange
			}
			tr.types = append(tr.types, fmt.Sprintf("%T", msg))
			switch m := msg.(type) {
			case *pgproto3.AuthenticationSASL:
				send(t, fe, &pgproto3.SASLInitialResponse{AuthMechanism: m.AuthMechanisms[0], Data: []byte(first)})
			case *pgproto3.AuthenticationSASLContinue:
				_, rest, _ := strings.Cut(string(m.Data), ",")
				tr.first = rest
				final, err := conv.Step(string(m.Data))
				if err != nil {
					t.Fatal(err)
				}
				send(t, fe, &pgproto3.SASLResponse{Data: []byte(final)})
			default:
				t.Fatalf("unexpected %T", msg)
			}
		}
	})
	tr.code, tr.text = code(err), strings.Replace(err.Error(), user, "USER", 1)
	return tr
}

// TestUnknownUserLooksLikeWrongPassword: an unknown user (and a user whose
// only secret is an md5 hash) goes through the same SCRAM messages as a
// wrong password and fails with the same 28P01; the mock salt is the same
// on every attempt, as a real user's is.
func TestUnknownUserLooksLikeWrongPassword(t *testing.T) {
	a := newAuth(t, SCRAM, User{Name: "app", Password: "pencil"}, User{Name: "old", Password: "md5" + strings.Repeat("0", 32)})
	wrong := scramTranscript(t, a, "app")
	if wrong.code != "28P01" || len(wrong.types) != 2 {
		t.Fatalf("wrong password: %+v", wrong)
	}
	for _, user := range []string{"nobody", "old"} {
		mock := scramTranscript(t, a, user)
		again := scramTranscript(t, a, user)
		if mock.first != again.first {
			t.Errorf("%s: mock salt changes between attempts: %s / %s", user, mock.first, again.first)
		}
		// Same salt length and iterations as the real user's.
		shape := func(s string) string {
			salt, iters, _ := strings.Cut(strings.TrimPrefix(s, "s="), ",")
			raw, _ := base64.StdEncoding.DecodeString(salt)
			return fmt.Sprintf("%d bytes of salt, %s", len(raw), iters)
		}
		if shape(mock.first) != shape(wrong.first) {
			t.Errorf("%s: server-first %q, real user's %q", user, shape(mock.first), shape(wrong.first))
		}
		mock.first, again.first = wrong.first, wrong.first
		if !reflect.DeepEqual(mock, wrong) {
			t.Errorf("%s:\n got %+v\nwant %+v", user, mock, wrong)
		}
	}
	// Two Authenticators (two servers) give an unknown user different salts.
	other := newAuth(t, SCRAM, User{Name: "app", Password: "pencil"})
	if scramTranscript(t, other, "nobody").first == scramTranscript(t, a, "nobody").first {
		t.Error("mock salt does not depend on the server's secret")
	}
}

func md5Client(t *testing.T, password, user string) func(fe *pgproto3.Frontend) {
	return func(fe *pgproto3.Frontend) {
		req := receive[*pgproto3.AuthenticationMD5Password](t, fe)
		inner := md5.Sum([]byte(password + user))
		send(t, fe, &pgproto3.PasswordMessage{Password: md5Response("md5"+hex.EncodeToString(inner[:]), req.Salt)})
		_, _ = fe.Receive()
	}
}

func TestMD5(t *testing.T) {
	hash := md5.Sum([]byte("s3cret" + "hashed"))
	verifier, err := NewSCRAMVerifier("pencil")
	if err != nil {
		t.Fatal(err)
	}
	a := newAuth(t, MD5,
		User{Name: "app", Password: "s3cret"},
		User{Name: "hashed", Password: "md5" + hex.EncodeToString(hash[:])},
		User{Name: "scrammy", Password: verifier})
	for _, tc := range []struct{ user, password, want string }{
		{"app", "s3cret", ""},
		{"app", "wrong", "28P01"},
		{"hashed", "s3cret", ""},
		{"hashed", "wrong", "28P01"},
		{"nobody", "s3cret", "28P01"},
	} {
		err := exchange(t, a, tc.user, md5Client(t, tc.password, tc.user))
		if tc.want == "" && err != nil || tc.want != "" && code(err) != tc.want {
			t.Errorf("%s/%s: want %q, got %v", tc.user, tc.password, tc.want, err)
		}
	}
	// A user with only a SCRAM verifier is switched to SCRAM, as Postgres
	// does on an md5 line.
	if err := exchange(t, a, "scrammy", scramClient(t, "pencil", mechanism, nil)); err != nil {
		t.Errorf("scram verifier under md5: %v", err)
	}
	// When no user has an md5 secret, an unknown user's mock is SCRAM too.
	onlySCRAM := newAuth(t, MD5, User{Name: "scrammy", Password: verifier})
	if err := exchange(t, onlySCRAM, "nobody", scramClient(t, "pencil", mechanism, nil)); code(err) != "28P01" {
		t.Errorf("unknown user, SCRAM-only md5 config: %v", err)
	}
	// A client that answers with something else is a protocol violation.
	err = exchange(t, a, "app", func(fe *pgproto3.Frontend) {
		receive[*pgproto3.AuthenticationMD5Password](t, fe)
		send(t, fe, &pgproto3.Query{String: "SELECT 1"})
	})
	if code(err) != "08P01" {
		t.Errorf("query instead of password: %v", err)
	}
}

func TestTrust(t *testing.T) {
	open := newAuth(t, Trust)
	if !open.AcceptsAnyUser() {
		t.Error("trust without users should accept any user")
	}
	if err := open.Authenticate(nil, "anyone"); err != nil {
		t.Errorf("open trust: %v", err)
	}
	listed := newAuth(t, Trust, User{Name: "app", Password: "x"})
	if listed.AcceptsAnyUser() {
		t.Error("trust with users accepts any user")
	}
	if err := listed.Authenticate(nil, "app"); err != nil {
		t.Errorf("listed user: %v", err)
	}
	err := listed.Authenticate(nil, "nobody")
	if se, _ := sqlerr.As(err); se == nil || se.Code != "28000" || se.Message != `role "nobody" does not exist` {
		t.Errorf("unlisted user: %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, cfg := range []Config{
		{Method: "password", Users: []User{{Name: "a", Password: "b"}}},
		{Method: MD5},
		{Method: SCRAM, Users: []User{{Name: "a", Password: "SCRAM-SHA-256$4096:c2FsdA==$x:y"}}},
		{Method: SCRAM, Users: []User{{Name: "a", Password: "b"}, {Name: "a", Password: "c"}}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestParseVerifier(t *testing.T) {
	v, err := NewSCRAMVerifier("pencil")
	if err != nil {
		t.Fatal(err)
	}
	cred, err := parseVerifier(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := formatVerifier(cred); got != v {
		t.Fatalf("round trip %s != %s", got, v)
	}
	want, _ := storedCredentials("pencil", []byte(cred.Salt), cred.Iters)
	if !reflect.DeepEqual(cred, want) {
		t.Fatal("verifier does not match the password")
	}
	key := strings.Repeat("A", 43) + "="
	for _, bad := range []string{
		"SCRAM-SHA-256$4096:c2FsdA==",
		"SCRAM-SHA-256$0:c2FsdA==$" + key + ":" + key,
		"SCRAM-SHA-256$4096:$" + key + ":" + key,
		"SCRAM-SHA-256$4096:c2FsdA==$AAAA:" + key,
		"SCRAM-SHA-256$4096:c2FsdA==$" + key + ":" + key + "!",
		"md5" + strings.Repeat("0", 32),
	} {
		if _, err := parseVerifier(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if _, err := parseVerifier("SCRAM-SHA-256$4096:c2FsdA==$" + key + ":" + key); err != nil {
		t.Errorf("refused a good verifier: %v", err)
	}
}

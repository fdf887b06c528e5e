package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// login is exchange through Login, with the Proof.
func login(t *testing.T, a *Authenticator, user string, client func(fe *pgproto3.Frontend)) (Proof, error) {
	t.Helper()
	sc, cc := net.Pipe()
	_ = sc.SetDeadline(time.Now().Add(10 * time.Second))
	_ = cc.SetDeadline(time.Now().Add(10 * time.Second))
	type result struct {
		p   Proof
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer sc.Close()
		p, err := a.Login(backendConn{pgproto3.NewBackend(sc, sc)}, user)
		done <- result{p, err}
	}()
	client(pgproto3.NewFrontend(cc, cc))
	cc.Close()
	r := <-done
	return r.p, r.err
}

// TestLoginProof: a SCRAM login leaves the ClientKey the client proved it
// holds (what SCRAM pass-through logs in to the backends with), equal to
// HMAC(SaltedPassword, "Client Key"), with the verifier's salt, iteration
// count and ServerKey; a plain-text password configured is handed on too;
// a user not listed is looked up (auth_query), and a lookup's error ends
// the login. Before, Authenticate returned nothing but nil.
func TestLoginProof(t *testing.T) {
	verifier, err := NewSCRAMVerifier("pencil")
	if err != nil {
		t.Fatal(err)
	}
	cred, _ := parseVerifier(verifier)
	salted, _ := pbkdf2.Key(sha256.New, "pencil", []byte(cred.Salt), cred.Iters, 32)
	h := hmac.New(sha256.New, salted)
	h.Write([]byte("Client Key"))
	want := h.Sum(nil)

	lookups := 0
	a, err := New(Config{Method: SCRAM, Users: []User{{Name: "app", Password: verifier}, {Name: "plain", Password: "pencil"}},
		Lookup: func(user string) (string, bool, error) {
			lookups++
			switch user {
			case "looked":
				return verifier, true, nil
			case "broken":
				return "", false, errors.New("main is down")
			}
			return "", false, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"app", "looked"} {
		p, err := login(t, a, user, scramClient(t, "pencil", mechanism, nil))
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		if p.SCRAM == nil || !bytes.Equal(p.SCRAM.ClientKey, want) || p.SCRAM.Iters != cred.Iters ||
			string(p.SCRAM.Salt) != cred.Salt || !bytes.Equal(p.SCRAM.ServerKey, cred.ServerKey) || p.Password != "" {
			t.Fatalf("%s: proof %+v, want ClientKey %x", user, p.SCRAM, want)
		}
	}
	p, err := login(t, a, "plain", scramClient(t, "pencil", mechanism, nil))
	if err != nil || p.Password != "pencil" || p.SCRAM == nil {
		t.Fatalf("plain: %+v, %v", p, err)
	}
	if _, err := login(t, a, "nobody", scramClient(t, "pencil", mechanism, nil)); code(err) != "28P01" {
		t.Fatalf("unknown user: %v", err)
	}
	if _, err := a.Login(nil, "broken"); err == nil || err.Error() != "main is down" {
		t.Fatalf("lookup error: %v", err)
	}
	if lookups != 3 {
		t.Fatalf("%d lookups, want 3 (listed users are not looked up)", lookups)
	}
	if _, err := login(t, a, "app", scramClient(t, "wrong", mechanism, nil)); code(err) != "28P01" {
		t.Fatalf("wrong password: %v", err)
	}
}

// TestLookedUpUserWrongPasswordLogged: a wrong password of a user found by
// the lookup (auth_query) is logged like a listed user's, without the
// password; an unknown user's line says so. Before, only listed users'
// failures were logged.
func TestLookedUpUserWrongPasswordLogged(t *testing.T) {
	verifier, err := NewSCRAMVerifier("pencil")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	a, err := New(Config{Method: SCRAM, Users: []User{{Name: "app", Password: verifier}},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Lookup: func(user string) (string, bool, error) {
			if user == "looked" {
				return verifier, true, nil
			}
			return "", false, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := login(t, a, "looked", scramClient(t, "wrongpass", mechanism, nil)); code(err) != "28P01" {
		t.Fatalf("wrong password: %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, "password authentication failed") || !strings.Contains(out, "user=looked") {
		t.Fatalf("no log line for the looked-up user's failure:\n%s", out)
	}
	if strings.Contains(out, "wrongpass") || strings.Contains(out, "pencil") {
		t.Fatalf("a password is in the log:\n%s", out)
	}
}

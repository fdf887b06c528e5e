package backend

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/sqlerr"
)

// passThroughKeys are the keys a client that knows password would prove
// against verifier (as read from pg_authid).
func passThroughKeys(t *testing.T, verifier, password string) *SCRAMKeys {
	t.Helper()
	rest, _ := strings.CutPrefix(verifier, "SCRAM-SHA-256$")
	params, keys, _ := strings.Cut(rest, "$")
	is, ss, _ := strings.Cut(params, ":")
	_, server, _ := strings.Cut(keys, ":")
	iters, _ := strconv.Atoi(is)
	salt, err1 := base64.StdEncoding.DecodeString(ss)
	serverKey, err2 := base64.StdEncoding.DecodeString(server)
	if err1 != nil || err2 != nil {
		t.Fatalf("verifier %q", verifier)
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iters, 32)
	if err != nil {
		t.Fatal(err)
	}
	h := hmac.New(sha256.New, salted)
	h.Write([]byte("Client Key"))
	return &SCRAMKeys{Salt: salt, Iters: iters, ClientKey: h.Sum(nil), ServerKey: serverKey}
}

// TestSCRAMPassThroughLogin: a pool with a Login of SCRAM keys logs in to
// a real Postgres that asks the role for a SCRAM password, as the role,
// without the password; a wrong key is the cluster's 28P01, a verifier
// with another salt is refused with 28000 before any proof is sent, and
// neither marks the cluster unreachable. Before, pools logged in as the
// DSN's user only.
func TestSCRAMPassThroughLogin(t *testing.T) {
	env := testenv.Shared(t)
	c := env.Clusters[0]
	ctx := context.Background()
	if err := c.Exec(ctx, "", `DROP ROLE IF EXISTS sg_pt; SET password_encryption = 'scram-sha-256'; CREATE ROLE sg_pt LOGIN PASSWORD 'pt secret'`); err != nil {
		t.Fatal(err)
	}
	if err := c.RequirePassword(ctx, "sg_pt"); err != nil {
		t.Fatal(err)
	}
	conn, err := c.Conn(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var verifier string
	err = conn.QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = 'sg_pt'").Scan(&verifier)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys := passThroughKeys(t, verifier, "pt secret")

	pool := NewPool("pg0", c.DSN(""), 2, time.Second, 5*time.Second, 0)
	defer pool.Close()
	b, err := pool.AcquireAs(nil, Login{User: "sg_pt", SCRAM: keys})
	if err != nil {
		t.Fatalf("pass-through login: %v", err)
	}
	rows, err := b.Query("SELECT current_user, session_user")
	if err != nil || len(rows) != 1 || string(rows[0][0]) != "sg_pt" || string(rows[0][1]) != "sg_pt" {
		t.Fatalf("current_user, session_user = %q, %v; want sg_pt", rows, err)
	}
	if !b.alive() {
		t.Fatal("a pass-through connection must be the socket itself (liveness peek)")
	}
	pool.Release(b)

	wrong := *keys
	wrong.ClientKey = append([]byte(nil), keys.ClientKey...)
	wrong.ClientKey[0] ^= 1
	bad := NewPool("pg0", c.DSN(""), 2, time.Second, 5*time.Second, 0)
	defer bad.Close()
	if _, err := bad.AcquireAs(nil, Login{User: "sg_pt", SCRAM: &wrong}); sqlerr.Code(err) != "28P01" {
		t.Fatalf("wrong ClientKey: want 28P01, got %v", err)
	}

	salted := *keys
	salted.Salt = []byte("another salt 16b")
	other := NewPool("pg0", c.DSN(""), 2, time.Second, 5*time.Second, 0)
	defer other.Close()
	_, err = other.AcquireAs(nil, Login{User: "sg_pt", SCRAM: &salted})
	if sqlerr.Code(err) != "28000" || !strings.Contains(err.Error(), "differs") || !strings.Contains(err.Error(), "cluster pg0") {
		t.Fatalf("other salt: want 28000 naming the cluster, got %v", err)
	}
	if info := other.Info(); info.Down {
		t.Fatal("a refused login must not mark the cluster unreachable")
	}

	// No secret at all: the cluster's request for a password is 28000 for
	// the role, and the cluster stays up.
	none := NewPool("pg0", c.DSN(""), 2, time.Second, 5*time.Second, 0)
	defer none.Close()
	_, err = none.AcquireAs(nil, Login{User: "sg_pt"})
	if sqlerr.Code(err) != "28000" || !strings.Contains(err.Error(), "has none") {
		t.Fatalf("no secret: want 28000, got %v", err)
	}
	if none.Info().Down {
		t.Fatal("a login without a secret must not mark the cluster unreachable")
	}

	// A plain-text password is answered by pgconn itself.
	plain := NewPool("pg0", c.DSN(""), 2, time.Second, 5*time.Second, 0)
	defer plain.Close()
	b, err = plain.AcquireAs(nil, Login{User: "sg_pt", Password: "pt secret"})
	if err != nil {
		t.Fatalf("password login: %v", err)
	}
	rows, _ = b.Query("SELECT current_user")
	if len(rows) != 1 || string(rows[0][0]) != "sg_pt" {
		t.Fatalf("current_user = %q", rows)
	}
	plain.Release(b)
}

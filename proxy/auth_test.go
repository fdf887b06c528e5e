package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestAuthMethods(t *testing.T) {
	verifier, err := NewSCRAMVerifier("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method   AuthMethod
		password string // as configured
	}{
		{AuthMD5, "s3cret"},
		{AuthMD5, "md5" + mustMD5("s3cret"+"app")},
		{AuthSCRAM, "s3cret"},
		{AuthSCRAM, verifier},
	}
	for _, c := range cases {
		name := string(c.method) + "/" + c.password[:min(len(c.password), 8)]
		t.Run(name, func(t *testing.T) {
			p := startProxy(t, shopTopology(""), func(cfg *Config) {
				cfg.AuthMethod = c.method
				cfg.Users = map[string]User{"app": {Name: "app", Password: c.password}}
			})
			ctx := context.Background()
			good := strings.Replace(p.dsn(), "app@", "app:s3cret@", 1)
			conn, err := pgx.Connect(ctx, good)
			if err != nil {
				t.Fatalf("good password: %v", err)
			}
			var one int
			if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatal(err)
			}
			conn.Close(ctx)
			bad := strings.Replace(p.dsn(), "app@", "app:wrong@", 1)
			if _, err := pgx.Connect(ctx, bad); sqlstate(err) != "28P01" {
				t.Fatalf("wrong password: want 28P01, got %v", err)
			}
			nobody := strings.Replace(p.dsn(), "app@", "nobody:s3cret@", 1)
			if _, err := pgx.Connect(ctx, nobody); sqlstate(err) != "28P01" {
				t.Fatalf("unknown user: want 28P01, got %v", err)
			}
		})
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestTLS(t *testing.T) {
	cert := selfSigned(t)
	p := startProxy(t, shopTopology(""), func(cfg *Config) {
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	})
	ctx := context.Background()
	dsn := strings.Replace(p.dsn(), "sslmode=disable", "sslmode=require", 1)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Fatalf("connection is not TLS: %T", conn.PgConn().Conn())
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
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

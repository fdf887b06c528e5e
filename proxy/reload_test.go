package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/topology"
)

// A table that resolved to main and holds rows there cannot join a group
// by an edit of the file: its rows would no longer be read. Once empty,
// it can.
func TestReloadRefusesTableWithRows(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	mustExec(t, c, "DROP TABLE IF EXISTS notes")
	mustExec(t, c, "CREATE TABLE notes (k text PRIMARY KEY, v text)") // not named: main, on pg0
	mustExec(t, c, "INSERT INTO notes VALUES ('a', 'b')")
	moved, err := parseTopo(strings.Replace(shopTopology(""), "reference: [countries]", "reference: [countries, notes]", 1))
	if err != nil {
		t.Fatal(err)
	}
	err = p.srv.Reload(moved)
	var refused *topology.RefusedError
	if !errors.As(err, &refused) || len(refused.Changes) != 1 ||
		!strings.HasPrefix(refused.Changes[0].Message, "table public.notes moves from main to group by_customer as a reference table, and it holds rows on cluster pg0: ") {
		t.Fatalf("Reload = %v, want the move of notes refused", err)
	}
	if p.srv.cur.Load().vs.Table("", "notes").Group.Name != topology.MainGroup {
		t.Fatal("the refused topology is in force")
	}
	var n int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM notes").Scan(&n); err != nil || n != 1 {
		t.Fatalf("notes after the refused reload: %d rows, %v", n, err)
	}

	mustExec(t, c, "DELETE FROM notes")
	if err := p.srv.Reload(moved); err != nil {
		t.Fatalf("an empty table cannot join a group: %v", err)
	}
	if p.srv.cur.Load().vs.Table("", "notes").Group.Name != "by_customer" {
		t.Fatal("the reloaded topology is not in force")
	}
}

// proxy.pool.size applies to the pools in use: after a shrink, the
// connections above the new size are closed as they come back.
func TestReloadPoolSize(t *testing.T) {
	yaml := func(size string) string { return shopTopology("proxy: { pool: { size: " + size + " } }\n") }
	p := startProxy(t, yaml("3"), func(cfg *Config) { cfg.PoolSize = 3 })
	var held []*pgx.Conn
	for i := 0; i < 3; i++ { // three transactions on main hold three connections of pg0
		c := connect(t, p.dsn())
		mustExec(t, c, "BEGIN")
		mustExec(t, c, "SELECT 1")
		held = append(held, c)
	}
	if open := poolStats(p.srv)["pg0"][0]; open != 3 {
		t.Fatalf("pg0 has %d connections open, want 3", open)
	}
	smaller, err := parseTopo(yaml("1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.srv.Reload(smaller); err != nil {
		t.Fatal(err)
	}
	for _, c := range held {
		mustExec(t, c, "COMMIT")
	}
	deadline := time.Now().Add(10 * time.Second)
	for poolStats(p.srv)["pg0"][0] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("pg0 still has %d connections open after shrinking the pool to 1", poolStats(p.srv)["pg0"][0])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 with the given
// common name, and its key, as PEM files.
func writeCert(t *testing.T, certFile, keyFile, name string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// servedCertificate asks the proxy for TLS and returns the common name of
// the certificate it presents.
func servedCertificate(t *testing.T, addr string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := make([]byte, 8)
	binary.BigEndian.PutUint32(req[0:], 8)
	binary.BigEndian.PutUint32(req[4:], 80877103) // SSLRequest
	if _, err := conn.Write(req); err != nil {
		t.Fatal(err)
	}
	answer := make([]byte, 1)
	if _, err := conn.Read(answer); err != nil || answer[0] != 'S' {
		t.Fatalf("SSLRequest answered %q, %v", answer, err)
	}
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	return tc.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// tlsTopology is the shop topology with proxy.tls (a certificate of the
// given common name, and extra keys of tls:), and the served TLS
// configuration.
func tlsTopology(t *testing.T, name, extra string) (yaml string, topo *topology.Topology, served *tls.Config, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	writeCert(t, certFile, keyFile, name)
	yaml = shopTopology("proxy: { tls: { cert: " + certFile + ", key: " + keyFile + extra + " } }\n")
	topo, err := parseTopo(yaml)
	if err != nil {
		t.Fatal(err)
	}
	if served, err = topo.Proxy.TLS.Load(); err != nil {
		t.Fatal(err)
	}
	return yaml, topo, served, certFile, keyFile
}

// A reload re-reads the certificate files of proxy.tls, so a renewed
// certificate serves new connections without a restart.
func TestReloadTLSCertificate(t *testing.T) {
	yaml, topo, served, certFile, keyFile := tlsTopology(t, "first", "")
	p := startProxy(t, yaml, func(cfg *Config) { cfg.TLS = served })
	if name := servedCertificate(t, p.addr); name != "first" {
		t.Fatalf("serves %q, want the first certificate", name)
	}
	writeCert(t, certFile, keyFile, "renewed")
	if name := servedCertificate(t, p.addr); name != "first" {
		t.Fatalf("serves %q before the reload", name)
	}
	if err := p.srv.Reload(topo); err != nil {
		t.Fatal(err)
	}
	if name := servedCertificate(t, p.addr); name != "renewed" {
		t.Fatalf("serves %q after the reload, want the renewed certificate", name)
	}
	// A certificate that cannot be loaded refuses the reload and keeps
	// the one in force.
	if err := os.WriteFile(keyFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.srv.Reload(topo); err == nil || !strings.Contains(err.Error(), "proxy.tls") {
		t.Fatalf("Reload with a broken key = %v", err)
	}
	if name := servedCertificate(t, p.addr); name != "renewed" {
		t.Fatalf("serves %q after a refused reload", name)
	}
}

package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"encoding/pem"
)

// Clusters that serve TLS (Options.TLS): Start makes a certificate
// authority for the Env (BaseDir/ca.crt, Env.CAFile; its key stays in
// memory) and, for each such cluster, a server certificate it signs, for
// 127.0.0.1 and localhost, in the cluster's directory; the server runs
// with ssl = on. Plain connections (Cluster.DSN, sslmode=disable) still
// work; Cluster.TLSDSN verifies the server against the CA. Both are made
// anew on every Start, a kept BaseDir's too.

// certAuthority signs the clusters' server certificates.
type certAuthority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// newCA makes a certificate authority and writes its certificate to file.
func newCA(file string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "shardgate testenv CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	return &certAuthority{cert: cert, key: key}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// issue writes a server certificate for 127.0.0.1 and localhost, signed by
// ca, and its key (mode 0600, as Postgres requires) into dir.
func (ca *certAuthority) issue(dir, name string, o *owner) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	for _, f := range []struct {
		path string
		data []byte
	}{
		{certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})},
		{keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})},
	} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return "", "", err
		}
		if err := os.Chmod(f.path, 0o600); err != nil {
			return "", "", err
		}
		if err := o.chown(f.path); err != nil {
			return "", "", err
		}
	}
	return certFile, keyFile, nil
}

// setUpTLS makes the CA and the certificates of the clusters listed in
// tls (indexes).
func (e *Env) setUpTLS(tls []int) error {
	if len(tls) == 0 {
		return nil
	}
	e.CAFile = filepath.Join(e.BaseDir, "ca.crt")
	ca, err := newCA(e.CAFile)
	if err != nil {
		return fmt.Errorf("testenv: certificate authority: %w", err)
	}
	for _, i := range tls {
		if i < 0 || i >= len(e.Clusters) {
			return fmt.Errorf("testenv: Options.TLS names cluster %d of %d", i, len(e.Clusters))
		}
		c := e.Clusters[i]
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
		if err := e.owner.chown(c.dir); err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
		if c.tlsCert, c.tlsKey, err = ca.issue(c.dir, c.Name, e.owner); err != nil {
			return fmt.Errorf("testenv: %s: server certificate: %w", c.Name, err)
		}
	}
	return nil
}

// tlsSettings are the server settings of a cluster that serves TLS.
func (c *Cluster) tlsSettings(s map[string]string) {
	if c.tlsCert == "" {
		return
	}
	s["ssl"] = "on"
	s["ssl_cert_file"] = c.tlsCert
	s["ssl_key_file"] = c.tlsKey
}

// TLS reports whether the cluster serves TLS (Options.TLS).
func (c *Cluster) TLS() bool { return c.tlsCert != "" }

// TLSDSN is DSN over TLS with the given sslmode (require, verify-ca,
// verify-full), verifying the server against the Env's CA.
func (c *Cluster) TLSDSN(db, sslmode string) string {
	if db == "" {
		db = "postgres"
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=%s&sslrootcert=%s", c.Port, url.PathEscape(db), sslmode, url.QueryEscape(c.env.CAFile))
}

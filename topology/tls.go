package topology

import (
	"crypto/tls"
	"fmt"
)

// Load reads the certificate and key into a server configuration for
// client connections (TLS 1.2 or newer).
func (t *TLSConfig) Load() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
	if err != nil {
		return nil, fmt.Errorf("proxy.tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

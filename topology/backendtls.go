package topology

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"

	"gopkg.in/yaml.v3"
)

// TLS to the backends is set per cluster in its DSN, with libpq's
// parameters, which every connection the proxy and its commands make to a
// cluster reads (pools, two-phase commit recovery, sequences, workflows
// and their replication connections, secondary-index backfills,
// `topology init`): sslmode (disable, allow, prefer — the default —,
// require, verify-ca, verify-full), sslrootcert (the CA that signs the
// server's certificate), sslcert and sslkey (a client certificate). Paths
// relative to the topology file's directory are made absolute here, so the
// DSN means the same from any working directory.

// sslModes are the sslmode values libpq (and pgconn) accept.
var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// sslFiles are the DSN parameters naming a file.
var sslFiles = []string{"sslrootcert", "sslcert", "sslkey"}

// backendTLS checks a DSN's TLS parameters and returns it with their
// relative paths resolved.
func (d *decoder) backendTLS(n *yaml.Node, what, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn // checkDSN reported it
	}
	q := u.Query()
	if m := q.Get("sslmode"); q.Has("sslmode") && !slices.Contains(sslModes, m) {
		d.errorf(n, "%s: sslmode %q is not one of disable, allow, prefer, require, verify-ca, verify-full", what, m)
	}
	if (q.Get("sslmode") == "verify-ca" || q.Get("sslmode") == "verify-full") && !q.Has("sslrootcert") {
		d.warnf(n, "%s: sslmode %s without sslrootcert verifies the server against the system's certificate authorities", what, q.Get("sslmode"))
	}
	if q.Has("sslcert") != q.Has("sslkey") {
		d.errorf(n, "%s: sslcert and sslkey go together (a client certificate and its key)", what)
	}
	changed := false
	for _, k := range sslFiles {
		p := q.Get(k)
		if p == "" || p == "system" && k == "sslrootcert" {
			continue
		}
		if !filepath.IsAbs(p) && d.file != "" {
			p = filepath.Join(filepath.Dir(d.file), p)
			q.Set(k, p)
			changed = true
		}
		if _, err := os.Stat(p); err != nil {
			d.errorf(n, "%s: %s: %v", what, k, err)
		}
	}
	if !changed {
		return dsn
	}
	u.RawQuery = q.Encode()
	return u.String()
}

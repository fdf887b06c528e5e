package topology

import (
	"encoding/base64"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// defaultProxy is the proxy configuration of a file without proxy:.
func defaultProxy() ProxyConfig {
	return ProxyConfig{
		Listen:     "127.0.0.1:6432",
		Auth:       AuthConfig{Method: AuthTrust, Identity: IdentityService},
		Pool:       PoolConfig{Mode: PoolTransaction, Size: 10, MaxWait: 5 * time.Second},
		Timeouts:   TimeoutConfig{Connect: 5 * time.Second, Auth: 10 * time.Second, Shutdown: 30 * time.Second},
		Commit:     CommitTwoPhase,
		Limits:     DefaultLimits,
		Reads:      ReadsConfig{Target: TargetPrimary, ReadOnlyTransactions: TargetPrimary},
		QueryStats: QueryStatsConfig{Max: DefaultQueryStatsMax},
	}
}

func (d *decoder) proxy(n *yaml.Node, pc *ProxyConfig) {
	fs, ok := d.fields(n, "proxy", "listen", "database", "auth", "tls", "pool", "timeouts", "commit", "log", "intermediate", "limits", "reads", "query_stats")
	if !ok {
		return
	}
	if f, ok := fs["listen"]; ok {
		if s, ok := d.str(f.val, "listen"); ok {
			if err := checkListen(s); err != nil {
				d.errorf(f.val, "%v", err)
			}
			pc.Listen = s
		}
	}
	if f, ok := fs["database"]; ok {
		if s, ok := d.str(f.val, "database"); ok {
			pc.Database = s
		}
	}
	if f, ok := fs["auth"]; ok {
		d.auth(f, &pc.Auth)
	}
	if f, ok := fs["tls"]; ok {
		pc.TLS = d.tls(f)
	}
	if f, ok := fs["pool"]; ok {
		d.pool(f.val, &pc.Pool)
	}
	if f, ok := fs["timeouts"]; ok {
		tfs, _ := d.fields(f.val, "timeouts", "connect", "query", "auth", "shutdown")
		d.duration(tfs, "connect", &pc.Timeouts.Connect)
		d.duration(tfs, "query", &pc.Timeouts.Query)
		d.duration(tfs, "auth", &pc.Timeouts.Auth)
		d.duration(tfs, "shutdown", &pc.Timeouts.Shutdown)
		if f, ok := tfs["auth"]; ok && pc.Timeouts.Auth == 0 {
			d.errorf(f.val, "auth: the start-up and authentication timeout must be positive")
		}
	}
	if f, ok := fs["log"]; ok {
		lfs, _ := d.fields(f.val, "log", "slow_statement", "sample_statements")
		d.duration(lfs, "slow_statement", &pc.Log.SlowStatement)
		if f, ok := lfs["sample_statements"]; ok {
			if v, ok := d.share(f.val, "sample_statements"); ok {
				pc.Log.SampleStatements = v
			}
		}
	}
	if f, ok := fs["query_stats"]; ok {
		qfs, _ := d.fields(f.val, "query_stats", "max")
		if f, ok := qfs["max"]; ok {
			if v, ok := d.integer(f.val, "max"); ok && (v < 0 || v > 1000000) {
				d.errorf(f.val, "max: the number of fingerprints must be between 0 (off) and 1000000")
			} else if ok {
				pc.QueryStats.Max = int(v)
			}
		}
	}
	if f, ok := fs["intermediate"]; ok {
		ifs, _ := d.fields(f.val, "intermediate", "max_rows", "max_bytes")
		for key, dst := range map[string]*int64{"max_rows": &pc.Intermediate.MaxRows, "max_bytes": &pc.Intermediate.MaxBytes} {
			if f, ok := ifs[key]; ok {
				if v, ok := d.integer(f.val, key); ok && v <= 0 {
					d.errorf(f.val, "%s: the limit must be positive", key)
				} else if ok {
					*dst = v
				}
			}
		}
	}
	if f, ok := fs["limits"]; ok {
		d.limits(f.val, &pc.Limits)
	}
	if f, ok := fs["reads"]; ok {
		if rfs, ok := d.fields(f.val, "reads", "target", "read_only_transactions"); ok {
			if tf, ok := rfs["target"]; ok {
				d.target(tf.val, &pc.Reads.Target)
			}
			if tf, ok := rfs["read_only_transactions"]; ok {
				d.readOnlyTarget(tf.val, &pc.Reads.ReadOnlyTransactions)
			}
		}
	}
	if f, ok := fs["commit"]; ok {
		if s, ok := d.oneOf(f.val, "commit", CommitTwoPhase, CommitBestEffort); ok {
			pc.Commit = s
		}
	}
}

func checkListen(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		var p int
		p, err = strconv.Atoi(port)
		if err == nil && (p < 0 || p > 65535) {
			err = fmt.Errorf("port %d out of range", p)
		}
	}
	if err != nil {
		return fmt.Errorf("listen must be host:port, such as 127.0.0.1:6432 (%q: %v)", s, err)
	}
	return nil
}

func (d *decoder) auth(f field, a *AuthConfig) {
	fs, ok := d.fields(f.val, "auth", "method", "users", "identity", "query")
	if !ok {
		return
	}
	if mf, ok := fs["method"]; ok {
		if s, ok := d.oneOf(mf.val, "auth method", AuthTrust, AuthMD5, AuthSCRAM); ok {
			a.Method = s
		}
	}
	d.identity(fs, a)
	if uf, ok := fs["users"]; ok {
		ps, _ := d.pairs(uf.val, "users")
		for _, p := range ps {
			u := &User{Name: p.key.Value, Pos: pos(p.key)}
			ufs, ok := d.fields(p.val, "user", "password", "password_file", "admin", "server_password", "target", "read_only_transactions")
			if !ok {
				continue
			}
			if af, ok := ufs["admin"]; ok {
				u.Admin, _ = d.boolean(af.val, "admin")
			}
			if tf, ok := ufs["target"]; ok {
				d.target(tf.val, &u.Target)
			}
			if tf, ok := ufs["read_only_transactions"]; ok {
				d.readOnlyTarget(tf.val, &u.ReadOnlyTransactions)
			}
			if sf, ok := ufs["server_password"]; ok {
				if sp, ok := d.str(sf.val, "server_password"); ok {
					if !envRef.MatchString(sp) {
						d.clearPassword = true
					}
					u.ServerPassword, _ = d.expandEnv(sf.val, sp, fmt.Sprintf("user %q server_password", u.Name), false)
				}
			}
			pf, ok := d.userPassword(ufs, p.key, u)
			if !ok {
				continue
			}
			d.checkPassword(u, a.Method, pf.val)
			a.Users = append(a.Users, u)
		}
	}
	if a.Method != AuthTrust && len(a.Users) == 0 && !a.Query {
		d.errorf(f.key, "auth method %s needs at least one user under users:", a.Method)
	}
}

// userPassword reads a user's password: password: (plain text, or
// ${ENV}) or password_file:, exactly one of them.
func (d *decoder) userPassword(fs map[string]field, key *yaml.Node, u *User) (field, bool) {
	what := fmt.Sprintf("user %q", u.Name)
	pf, inline := fs["password"]
	ff, fromFile := fs["password_file"]
	switch {
	case inline && fromFile:
		d.errorf(ff.key, "%s: give password or password_file, not both", what)
		return pf, false
	case fromFile:
		p, ok := d.readSecretFile(ff.val, what)
		u.Password = p
		return ff, ok
	case !inline:
		d.errorf(key, "%s needs password: or password_file:", what)
		return pf, false
	}
	p, ok := d.str(pf.val, "password")
	if !ok {
		return pf, false
	}
	if !envRef.MatchString(p) {
		d.clearPassword = true
	}
	u.Password, ok = d.expandEnv(pf.val, p, what+" password", false)
	return pf, ok
}

func (d *decoder) checkPassword(u *User, method string, n *yaml.Node) {
	p := u.Password
	switch {
	case strings.HasPrefix(p, scramPrefix) && !validSCRAM(p):
		d.errorf(n, "password of user %q looks like a SCRAM verifier but is malformed (expected SCRAM-SHA-256$iterations:salt$storedkey:serverkey)", u.Name)
	case strings.HasPrefix(p, "md5") && passwordKind(p) == PasswordPlain:
		d.warnf(n, "password of user %q starts with \"md5\" but is not an md5 hash (md5 and 32 hex digits); it is used as a plain-text password", u.Name)
	case method == AuthSCRAM && passwordKind(p) == PasswordMD5:
		d.errorf(n, "user %q has an md5 password hash, which scram-sha-256 authentication cannot use (store the plain-text password or a SCRAM verifier)", u.Name)
	}
}

const scramPrefix = "SCRAM-SHA-256$"

// passwordKind follows Postgres's get_password_type: an md5 hash is "md5"
// and 32 hex digits, a SCRAM verifier must parse, anything else is plain
// text.
func passwordKind(p string) PasswordKind {
	if len(p) == 35 && strings.HasPrefix(p, "md5") && isHex(p[3:]) {
		return PasswordMD5
	}
	if validSCRAM(p) {
		return PasswordSCRAM
	}
	return PasswordPlain
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// validSCRAM checks the form SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>
// with base64 salt and 32-byte keys, as parse_scram_secret does.
func validSCRAM(p string) bool {
	rest, ok := strings.CutPrefix(p, scramPrefix)
	if !ok {
		return false
	}
	params, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return false
	}
	iter, salt, ok := strings.Cut(params, ":")
	if !ok {
		return false
	}
	if n, err := strconv.Atoi(iter); err != nil || n < 1 {
		return false
	}
	if _, err := base64.StdEncoding.DecodeString(salt); err != nil || salt == "" {
		return false
	}
	stored, server, ok := strings.Cut(keys, ":")
	if !ok {
		return false
	}
	for _, k := range []string{stored, server} {
		b, err := base64.StdEncoding.DecodeString(k)
		if err != nil || len(b) != 32 {
			return false
		}
	}
	return true
}

func (d *decoder) tls(f field) *TLSConfig {
	fs, ok := d.fields(f.val, "tls", "cert", "key", "required")
	if !ok {
		return nil
	}
	t := &TLSConfig{}
	if rf, ok := fs["required"]; ok {
		t.Required, _ = d.boolean(rf.val, "required")
	}
	for _, k := range []struct {
		key string
		dst *string
	}{{"cert", &t.Cert}, {"key", &t.Key}} {
		kf, ok := d.required(fs, f.val, k.key, "tls")
		if !ok {
			continue
		}
		if s, ok := d.str(kf.val, k.key); ok {
			if !filepath.IsAbs(s) && d.file != "" {
				s = filepath.Join(filepath.Dir(d.file), s)
			}
			*k.dst = s
		}
	}
	return t
}

func (d *decoder) pool(n *yaml.Node, p *PoolConfig) {
	fs, ok := d.fields(n, "pool", "mode", "size", "max_wait", "idle_timeout", "user_size")
	if !ok {
		return
	}
	if f, ok := fs["mode"]; ok {
		if s, ok := d.oneOf(f.val, "pool mode", PoolTransaction, PoolSession); ok {
			p.Mode = s
		}
	}
	if f, ok := fs["size"]; ok {
		if v, ok := d.integer(f.val, "size"); ok {
			if v < 1 || v > 1<<20 {
				d.errorf(f.val, "pool size must be a positive number of connections, not %d", v)
			} else {
				p.Size = int(v)
			}
		}
	}
	d.duration(fs, "max_wait", &p.MaxWait)
	d.duration(fs, "idle_timeout", &p.IdleTimeout)
	d.userSize(fs, p)
}

// duration reads an optional Go duration ("5s", "1m30s") into dst.
func (d *decoder) duration(fs map[string]field, key string, dst *time.Duration) {
	f, ok := fs[key]
	if !ok {
		return
	}
	s, ok := d.str(f.val, key)
	if !ok {
		return
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		d.errorf(f.val, "%s: invalid duration %q (use a number with a unit, such as 5s, 500ms or 1m)", key, s)
	case v < 0:
		d.errorf(f.val, "%s: duration must not be negative", key)
	default:
		*dst = v
	}
}

// limits reads proxy.limits: positive integers and a positive duration.
func (d *decoder) limits(n *yaml.Node, l *LimitsConfig) {
	fs, ok := d.fields(n, "limits", "max_clients", "max_buffered_bytes", "max_message_bytes", "startup_bytes", "startup_timeout")
	if !ok {
		return
	}
	for _, k := range []struct {
		key      string
		min, max int64
		set      func(int64)
	}{
		{"max_clients", 1, 1 << 24, func(v int64) { l.MaxClients = int(v) }},
		{"max_buffered_bytes", 1 << 20, 1 << 50, func(v int64) { l.MaxBufferedBytes = v }},
		{"max_message_bytes", 1 << 10, 1 << 30, func(v int64) { l.MaxMessageBytes = int(v) }},
		{"startup_bytes", 256, 1 << 20, func(v int64) { l.StartupBytes = int(v) }},
	} {
		f, ok := fs[k.key]
		if !ok {
			continue
		}
		if v, ok := d.integer(f.val, k.key); ok {
			if v < k.min || v > k.max {
				d.errorf(f.val, "%s: must be between %d and %d, not %d", k.key, k.min, k.max, v)
			} else {
				k.set(v)
			}
		}
	}
	d.duration(fs, "startup_timeout", &l.StartupTimeout)
	if f, ok := fs["startup_timeout"]; ok && l.StartupTimeout == 0 {
		d.errorf(f.val, "startup_timeout: must be positive")
	}
	if f, ok := fs["max_message_bytes"]; ok && int64(l.MaxMessageBytes) > l.MaxBufferedBytes {
		d.errorf(f.val, "max_message_bytes (%d) is more than max_buffered_bytes (%d): no such message could ever be read", l.MaxMessageBytes, l.MaxBufferedBytes)
	}
}

// share reads a number from 0 to 1.
func (d *decoder) share(n *yaml.Node, what string) (float64, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") {
		d.errorf(n, "%s must be a number from 0 to 1, not %s", what, describe(n))
		return 0, false
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || v < 0 || v > 1 || v != v {
		d.errorf(n, "%s must be a number from 0 to 1, not %s", what, n.Value)
		return 0, false
	}
	return v, true
}

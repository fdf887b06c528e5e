package topology

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Secrets in the file: a user's password and a cluster DSN's password
// may be written in the clear, taken from the environment (${NAME} in a
// DSN or a password), or read from a file (password_file:, relative to
// the topology file's directory; one trailing newline is dropped, as
// editors add one). Whatever the source, a password never leaves the
// process in a message: RedactDSN hides it wherever a DSN is printed, and
// nothing prints a user's password at all. A file that holds a password
// in the clear and that others may read (mode & 0o044) gets a warning.

// Redacted is what a hidden password is printed as.
const Redacted = "xxxxx"

// secretParams are DSN query parameters that hold secrets.
var secretParams = []string{"password", "sslpassword"}

// RedactDSN returns dsn with every password in it — the user:password@
// form and the password and sslpassword query parameters — replaced by
// Redacted. A DSN that does not parse is hidden whole, since where its
// password is cannot be told.
func RedactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return Redacted
	}
	if u.User != nil {
		if _, set := u.User.Password(); set {
			u.User = url.UserPassword(u.User.Username(), Redacted)
		}
	}
	if q := u.Query(); len(q) > 0 {
		changed := false
		for _, k := range secretParams {
			if q.Has(k) {
				q.Set(k, Redacted)
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// dsnHasPassword reports whether a DSN carries a password.
func dsnHasPassword(dsn string) bool {
	u, err := url.Parse(dsn)
	if err != nil {
		return false
	}
	if u.User != nil {
		if _, set := u.User.Password(); set {
			return true
		}
	}
	return u.Query().Has("password")
}

// clearInDSN reports whether a DSN as written holds a password itself,
// rather than a ${NAME} reference.
func clearInDSN(dsn string) bool {
	const ref = "sgenvref" // a ${NAME} does not parse as part of a URL
	u, err := url.Parse(envRef.ReplaceAllString(dsn, ref))
	if err != nil {
		return false
	}
	clear := func(p string) bool { return p != "" && !strings.Contains(p, ref) }
	if u.User != nil {
		if p, _ := u.User.Password(); clear(p) {
			return true
		}
	}
	return clear(u.Query().Get("password"))
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces every ${NAME} in s with the environment variable's
// value; an unset variable is an error at n. inDSN escapes the value for
// a URL (a password with @ or / in it stays one password).
func (d *decoder) expandEnv(n *yaml.Node, s, what string, inDSN bool) (string, bool) {
	ok := true
	out := envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := envRef.FindStringSubmatch(ref)[1]
		v, set := os.LookupEnv(name)
		if !set {
			d.errorf(n, "%s: environment variable %s is not set", what, name)
			ok = false
			return ref
		}
		if inDSN {
			return url.QueryEscape(v)
		}
		return v
	})
	return out, ok
}

// readSecretFile reads a password_file: value (relative to the topology
// file's directory), without its trailing newline.
func (d *decoder) readSecretFile(n *yaml.Node, what string) (string, bool) {
	path, ok := d.str(n, "password_file")
	if !ok {
		return "", false
	}
	if !filepath.IsAbs(path) && d.file != "" {
		path = filepath.Join(filepath.Dir(d.file), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		d.errorf(n, "%s: password_file: %v", what, err)
		return "", false
	}
	p := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if p == "" {
		d.errorf(n, "%s: password_file %s is empty", what, path)
		return "", false
	}
	return p, true
}

// withPassword sets a DSN's password (from password_file:).
func withPassword(dsn, password string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("invalid dsn: %v", stripURLError(err))
	}
	if dsnHasPassword(dsn) {
		return "", fmt.Errorf("the dsn has a password already; give it in one place")
	}
	user := ""
	if u.User != nil {
		user = u.User.Username()
	}
	u.User = url.UserPassword(user, password)
	return u.String(), nil
}

// warnReadable warns when the topology file holds a password in the clear
// and others may read it.
func (d *decoder) warnReadable(root *yaml.Node) {
	if !d.clearPassword || d.file == "" {
		return
	}
	fi, err := os.Stat(d.file)
	if err != nil || fi.Mode().Perm()&0o044 == 0 {
		return
	}
	d.report(pos(root), true, "the file holds a password in the clear and is readable by others (mode %04o): chmod 600 it, or take passwords from ${ENV} or password_file:", fi.Mode().Perm())
}

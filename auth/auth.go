package auth

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"

	"github.com/shardgate/shardgate/sqlerr"
)

// Method names how clients prove who they are.
type Method string

// Client authentication methods, as in pg_hba.conf.
const (
	Trust Method = "trust"
	MD5   Method = "md5"
	SCRAM Method = "scram-sha-256"
)

// User is one client login. Password holds the plain password, an
// "md5<32 hex digits>" hash or a "SCRAM-SHA-256$..." verifier, the forms
// pg_authid.rolpassword holds.
type User struct {
	Name     string
	Password string
	// Admin lets the user open the admin console.
	Admin bool
	// ServerPassword, if set, is the plain-text password the proxy logs
	// in to the backends with as this role (Proof.Password).
	ServerPassword string
}

// Config configures an Authenticator.
type Config struct {
	// Method is Trust (the default when empty), MD5 or SCRAM.
	Method Method
	// Users are the accepted logins. Empty: with Trust any user name is
	// accepted; MD5 and SCRAM need at least one user.
	Users []User
	// Secret seeds the salts of mock exchanges for unknown users. Empty: a
	// random secret, so mock salts are stable for the Authenticator's life.
	Secret []byte
	// Logger receives the reason of failed authentications that the client
	// is not told (missing user, unusable secret). Nil: slog.Default().
	Logger *slog.Logger
	// Lookup, if set, finds the secret of a user not in Users (as
	// pgbouncer's auth_query: pg_authid.rolpassword on main, through the
	// proxy's service identity). found false: no such role, or one without
	// a password; the client then gets the mock exchange. An error ends
	// the login with it. Not used with Trust.
	Lookup func(user string) (secret string, found bool, err error)
}

// Conn is the client side of one authentication exchange.
type Conn interface {
	// Send writes msg to the client and flushes it.
	Send(msg pgproto3.BackendMessage) error
	// Receive reads the client's next message. authType is the
	// authentication request it answers (pgproto3.AuthTypeMD5Password,
	// AuthTypeSASL or AuthTypeSASLContinue): it decides how a password
	// ('p') message is decoded.
	Receive(authType uint32) (pgproto3.FrontendMessage, error)
}

// Authenticator runs authentication exchanges for one configuration. It is
// safe for concurrent use.
type Authenticator struct {
	method Method
	users  map[string]*account // nil: any user name (trust only)
	secret []byte
	log    *slog.Logger
	// mockIters is the iteration count mock SCRAM exchanges announce: the
	// one most configured users have, so it gives nothing away.
	mockIters int
	// anyMD5: some user has an md5 secret, so an unknown user's mock
	// exchange under md5 is md5 too; otherwise it is SCRAM, like theirs.
	anyMD5 bool
	// nonce makes the server part of SCRAM nonces (tests fix it).
	nonce scram.NonceGeneratorFcn
	// lookup finds unlisted users' secrets (Config.Lookup).
	lookup func(user string) (string, bool, error)
}

// account is a user's secrets in the forms the exchanges need.
type account struct {
	name   string
	admin  bool
	md5    string                   // "md5" + hex(md5(password + name)); "" if unknown
	scram  *scram.StoredCredentials // nil if the password is only an md5 hash
	plain  string                   // the plain-text password, if configured so
	server string                   // User.ServerPassword
}

// New checks cfg and derives every user's secrets (a SCRAM verifier for a
// plain-text password, with a random salt, once).
func New(cfg Config) (*Authenticator, error) {
	a := &Authenticator{method: cfg.Method, secret: cfg.Secret, log: cfg.Logger, mockIters: defaultIterations, lookup: cfg.Lookup}
	if a.method == "" {
		a.method = Trust
	}
	switch a.method {
	case Trust, MD5, SCRAM:
	default:
		return nil, fmt.Errorf("unknown authentication method %q (expected trust, md5 or scram-sha-256)", cfg.Method)
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	if len(a.secret) == 0 {
		a.secret = make([]byte, 32)
		if _, err := io.ReadFull(rand.Reader, a.secret); err != nil {
			return nil, err
		}
	}
	if a.method != Trust && len(cfg.Users) == 0 {
		return nil, fmt.Errorf("authentication method %s needs at least one user", a.method)
	}
	if len(cfg.Users) > 0 {
		a.users = make(map[string]*account, len(cfg.Users))
		iters := map[int]int{}
		for _, u := range cfg.Users {
			if _, dup := a.users[u.Name]; dup {
				return nil, fmt.Errorf("user %q is listed twice", u.Name)
			}
			acct, err := newAccount(u)
			if err != nil {
				return nil, err
			}
			a.users[u.Name] = acct
			if acct.scram != nil {
				iters[acct.scram.Iters]++
			}
			a.anyMD5 = a.anyMD5 || acct.md5 != ""
		}
		for n, c := range iters {
			if c > iters[a.mockIters] || c == iters[a.mockIters] && n < a.mockIters {
				a.mockIters = n
			}
		}
	}
	return a, nil
}

func newAccount(u User) (*account, error) {
	acct := &account{name: u.Name, admin: u.Admin, server: u.ServerPassword}
	switch {
	case isMD5Hash(u.Password):
		acct.md5 = strings.ToLower(u.Password)
	case strings.HasPrefix(u.Password, verifierPrefix):
		cred, err := parseVerifier(u.Password)
		if err != nil {
			return nil, fmt.Errorf("user %q: %v", u.Name, err)
		}
		acct.scram = cred
	default:
		acct.plain = u.Password
		sum := md5.Sum([]byte(u.Password + u.Name))
		acct.md5 = "md5" + hex.EncodeToString(sum[:])
		salt := make([]byte, saltLen)
		if _, err := io.ReadFull(rand.Reader, salt); err != nil {
			return nil, err
		}
		cred, err := storedCredentials(u.Password, salt, defaultIterations)
		if err != nil {
			return nil, fmt.Errorf("user %q: %v", u.Name, err)
		}
		acct.scram = cred
	}
	return acct, nil
}

func isMD5Hash(p string) bool {
	if len(p) != 35 || !strings.HasPrefix(p, "md5") {
		return false
	}
	_, err := hex.DecodeString(p[3:])
	return err == nil
}

// AcceptsAnyUser reports whether every user name is let in without a
// password: method trust without a users list.
func (a *Authenticator) AcceptsAnyUser() bool { return a.method == Trust && a.users == nil }

// IsAdmin reports whether user is a listed user marked admin.
func (a *Authenticator) IsAdmin(user string) bool {
	acct := a.users[user]
	return acct != nil && acct.admin
}

// Admins are the listed users marked admin, sorted.
func (a *Authenticator) Admins() []string {
	var names []string
	for name, acct := range a.users {
		if acct.admin {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Method is the authentication method clients go through.
func (a *Authenticator) Method() Method { return a.method }

// Authenticate runs the configured exchange for user, the name of the
// client's StartupMessage. Nil means the client is authenticated and the
// caller sends AuthenticationOk; otherwise the error has a SQLSTATE
// (28P01, 28000, 08P01, 0A000) or is the Conn's I/O error.
func (a *Authenticator) Authenticate(c Conn, user string) error {
	_, err := a.Login(c, user)
	return err
}

// Login is Authenticate that also returns what the client's login gives
// the proxy towards logging in to the backends as the same role (Proof).
func (a *Authenticator) Login(c Conn, user string) (Proof, error) {
	acct := a.users[user]
	if acct == nil && a.lookup != nil && a.method != Trust {
		var err error
		if acct, err = a.lookUp(user); err != nil {
			return Proof{}, err
		}
	}
	proof, err := a.login(protocolConn{c}, user, acct)
	if acct != nil && sqlerr.Code(err) == "28P01" {
		// Unknown users are logged when their exchange starts; a known
		// user's failure (listed or looked up) is worth a line too: brute
		// force, a stale secret.
		a.log.Info("password authentication failed", "user", user, "method", a.method)
	}
	return proof, err
}

func (a *Authenticator) login(c Conn, user string, acct *account) (Proof, error) {
	switch a.method {
	case Trust:
		if a.users != nil && acct == nil {
			return Proof{}, sqlerr.New("28000", "role %q does not exist", user)
		}
		return acct.proof(), nil
	case MD5:
		switch {
		case acct == nil:
			a.log.Info("authentication of an unknown user", "user", user, "method", a.method)
			if !a.anyMD5 {
				return a.scramExchange(c, user, nil)
			}
			return Proof{}, a.md5Exchange(c, user, "")
		case acct.md5 != "":
			return acct.proof(), a.md5Exchange(c, user, acct.md5)
		default:
			// Only a SCRAM verifier: Postgres answers an md5 line with SCRAM.
			return a.scramExchange(c, user, acct)
		}
	case SCRAM:
		switch {
		case acct == nil:
			a.log.Info("authentication of an unknown user", "user", user, "method", a.method)
		case acct.scram == nil:
			a.log.Warn("user has only an md5 password hash, which scram-sha-256 cannot use", "user", user)
			acct = nil
		}
		return a.scramExchange(c, user, acct)
	}
	return Proof{}, sqlerr.New("28000", "unsupported authentication method %q", a.method)
}

// lookUp is the account of a user not listed, from Config.Lookup (nil if
// it has no usable secret).
func (a *Authenticator) lookUp(user string) (*account, error) {
	secret, found, err := a.lookup(user)
	if err != nil || !found {
		return nil, err
	}
	if !isMD5Hash(secret) && !strings.HasPrefix(secret, verifierPrefix) {
		a.log.Warn("looked-up secret is neither an md5 hash nor a SCRAM verifier", "user", user)
		return nil, nil
	}
	acct, err := newAccount(User{Name: user, Password: secret})
	if err != nil {
		a.log.Warn("looked-up secret is unusable", "user", user, "err", err)
		return nil, nil
	}
	return acct, nil
}

// Proof is what a client's login leaves the proxy to log in to the
// backends as the same role with.
type Proof struct {
	// Password is the plain-text password to log in to the backends with:
	// the user's ServerPassword, or else its password when the
	// configuration holds it in plain text.
	Password string
	// SCRAM is set after a SCRAM login: the ClientKey recovered from the
	// client's proof (ClientProof XOR ClientSignature), with the salt,
	// iteration count and ServerKey of the verifier it was checked with.
	SCRAM *SCRAMKeys
}

// SCRAMKeys are a verifier's salt, iteration count and ServerKey and the
// ClientKey a client proved it holds.
type SCRAMKeys struct {
	Salt      []byte
	Iters     int
	ClientKey []byte
	ServerKey []byte
}

func (acct *account) proof() Proof {
	if acct == nil {
		return Proof{}
	}
	if acct.server != "" {
		return Proof{Password: acct.server}
	}
	return Proof{Password: acct.plain}
}

// failed is the one error a wrong password and a missing user both get.
func failed(user string) error {
	return sqlerr.New("28P01", "password authentication failed for user %q", user)
}

func unexpected(what string, msg pgproto3.FrontendMessage) error {
	return sqlerr.New("08P01", "expected %s, got %T", what, msg)
}

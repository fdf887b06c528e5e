package proxy

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/sqlerr"
)

// AuthMethod names how clients prove who they are.
type AuthMethod string

// Client authentication methods, as in pg_hba.conf.
const (
	AuthTrust AuthMethod = "trust"
	AuthMD5   AuthMethod = "md5"
	AuthSCRAM AuthMethod = "scram-sha-256"
)

// User is one client login. Password holds the plain password, an
// "md5<hex>" hash (md5 only) or a "SCRAM-SHA-256$..." verifier (SCRAM only),
// the same forms pg_authid.rolpassword holds.
type User struct {
	Name     string
	Password string
}

var errAuthFailed = errors.New("authentication failed")

func authFailed(user string) error {
	return sqlerr.New("28P01", "password authentication failed for user %q", user)
}

// authenticate runs the configured exchange on a session that has sent its
// StartupMessage. On success the caller sends AuthenticationOk.
func (s *session) authenticate() error {
	cfg := s.srv.cfg
	if cfg.AuthMethod == "" || cfg.AuthMethod == AuthTrust {
		return nil
	}
	u, ok := cfg.Users[s.user]
	if !ok {
		// Run the exchange anyway would leak less, but Postgres reports the
		// same message for an unknown user and a wrong password.
		return authFailed(s.user)
	}
	switch cfg.AuthMethod {
	case AuthMD5:
		return s.authMD5(u)
	case AuthSCRAM:
		return s.authSCRAM(u)
	}
	return sqlerr.New("28000", "unsupported authentication method %q", cfg.AuthMethod)
}

func (s *session) authMD5(u User) error {
	var salt [4]byte
	_, _ = rand.Read(salt[:])
	if err := s.sendFlush(&pgproto3.AuthenticationMD5Password{Salt: salt}); err != nil {
		return err
	}
	_ = s.be.SetAuthType(pgproto3.AuthTypeMD5Password)
	msg, err := s.be.Receive()
	if err != nil {
		return err
	}
	pm, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		return sqlerr.New("08P01", "expected password response, got %T", msg)
	}
	inner := u.Password
	if !strings.HasPrefix(inner, "md5") || len(inner) != 35 {
		if strings.HasPrefix(inner, "SCRAM-SHA-256$") {
			return sqlerr.New("28P01", "user %q has only a SCRAM verifier; use scram-sha-256 authentication", u.Name)
		}
		sum := md5.Sum([]byte(u.Password + u.Name))
		inner = "md5" + hex.EncodeToString(sum[:])
	}
	outer := md5.Sum(append([]byte(inner[3:]), salt[:]...))
	want := "md5" + hex.EncodeToString(outer[:])
	if subtle.ConstantTimeCompare([]byte(want), []byte(pm.Password)) != 1 {
		return authFailed(u.Name)
	}
	return nil
}

// scramVerifier is the server's stored secret (RFC 5802 §3).
type scramVerifier struct {
	iter      int
	salt      []byte
	storedKey []byte
	serverKey []byte
}

func parseSCRAMVerifier(v string) (*scramVerifier, error) {
	// SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>
	rest, ok := strings.CutPrefix(v, "SCRAM-SHA-256$")
	if !ok {
		return nil, errors.New("not a SCRAM-SHA-256 verifier")
	}
	a, b, ok := strings.Cut(rest, "$")
	if !ok {
		return nil, errors.New("malformed SCRAM verifier")
	}
	is, ss, ok1 := strings.Cut(a, ":")
	sk, svk, ok2 := strings.Cut(b, ":")
	if !ok1 || !ok2 {
		return nil, errors.New("malformed SCRAM verifier")
	}
	iter, err := strconv.Atoi(is)
	if err != nil || iter <= 0 {
		return nil, errors.New("malformed SCRAM verifier iterations")
	}
	d := base64.StdEncoding
	salt, e1 := d.DecodeString(ss)
	stored, e2 := d.DecodeString(sk)
	server, e3 := d.DecodeString(svk)
	if e1 != nil || e2 != nil || e3 != nil {
		return nil, errors.New("malformed SCRAM verifier encoding")
	}
	return &scramVerifier{iter: iter, salt: salt, storedKey: stored, serverKey: server}, nil
}

// NewSCRAMVerifier computes a verifier from a plain password, the way
// Postgres stores it (4096 iterations, 16-byte random salt).
func NewSCRAMVerifier(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	v, err := scramFromPassword(password, salt, 4096)
	if err != nil {
		return "", err
	}
	d := base64.StdEncoding
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", v.iter, d.EncodeToString(v.salt), d.EncodeToString(v.storedKey), d.EncodeToString(v.serverKey)), nil
}

func scramFromPassword(password string, salt []byte, iter int) (*scramVerifier, error) {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iter, 32)
	if err != nil {
		return nil, err
	}
	clientKey := hmacSum(salted, []byte("Client Key"))
	stored := sha256.Sum256(clientKey)
	serverKey := hmacSum(salted, []byte("Server Key"))
	return &scramVerifier{iter: iter, salt: salt, storedKey: stored[:], serverKey: serverKey}, nil
}

func hmacSum(key, msg []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(msg)
	return h.Sum(nil)
}

func (s *session) authSCRAM(u User) error {
	var ver *scramVerifier
	var err error
	if strings.HasPrefix(u.Password, "SCRAM-SHA-256$") {
		ver, err = parseSCRAMVerifier(u.Password)
	} else if strings.HasPrefix(u.Password, "md5") && len(u.Password) == 35 {
		return sqlerr.New("28P01", "user %q has only an md5 hash; SCRAM needs a password or verifier", u.Name)
	} else {
		ver, err = s.srv.scramFor(u)
	}
	if err != nil {
		return sqlerr.New("28000", "bad SCRAM verifier for user %q: %v", u.Name, err)
	}
	if err := s.sendFlush(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}}); err != nil {
		return err
	}
	_ = s.be.SetAuthType(pgproto3.AuthTypeSASL)
	msg, err := s.be.Receive()
	if err != nil {
		return err
	}
	init, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok {
		return sqlerr.New("08P01", "expected SASL initial response, got %T", msg)
	}
	if init.AuthMechanism != "SCRAM-SHA-256" {
		return sqlerr.New("28000", "client selected an invalid SASL authentication mechanism")
	}
	// client-first-message: gs2-header client-first-message-bare
	cfm := string(init.Data)
	if !strings.HasPrefix(cfm, "n,,") && !strings.HasPrefix(cfm, "y,,") {
		return sqlerr.New("28000", "channel binding is not supported")
	}
	bare := cfm[3:]
	var clientNonce string
	for _, attr := range strings.Split(bare, ",") {
		if v, ok := strings.CutPrefix(attr, "r="); ok {
			clientNonce = v
		}
	}
	if clientNonce == "" {
		return sqlerr.New("08P01", "malformed SCRAM message: no nonce")
	}
	nb := make([]byte, 18)
	_, _ = rand.Read(nb)
	nonce := clientNonce + base64.StdEncoding.EncodeToString(nb)
	sfm := fmt.Sprintf("r=%s,s=%s,i=%d", nonce, base64.StdEncoding.EncodeToString(ver.salt), ver.iter)
	if err := s.sendFlush(&pgproto3.AuthenticationSASLContinue{Data: []byte(sfm)}); err != nil {
		return err
	}
	_ = s.be.SetAuthType(pgproto3.AuthTypeSASLContinue)
	msg, err = s.be.Receive()
	if err != nil {
		return err
	}
	resp, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return sqlerr.New("08P01", "expected SASL response, got %T", msg)
	}
	cf := string(resp.Data)
	i := strings.LastIndex(cf, ",p=")
	if i < 0 {
		return sqlerr.New("08P01", "malformed SCRAM message: no proof")
	}
	withoutProof := cf[:i]
	proof, err := base64.StdEncoding.DecodeString(cf[i+3:])
	if err != nil || len(proof) != sha256.Size {
		return sqlerr.New("08P01", "malformed SCRAM proof")
	}
	if !strings.Contains(withoutProof, "r="+nonce) {
		return sqlerr.New("08P01", "SCRAM nonce mismatch")
	}
	authMsg := bare + "," + sfm + "," + withoutProof
	sig := hmacSum(ver.storedKey, []byte(authMsg))
	clientKey := make([]byte, len(proof))
	for k := range proof {
		clientKey[k] = proof[k] ^ sig[k]
	}
	check := sha256.Sum256(clientKey)
	if subtle.ConstantTimeCompare(check[:], ver.storedKey) != 1 {
		return authFailed(u.Name)
	}
	serverSig := hmacSum(ver.serverKey, []byte(authMsg))
	final := "v=" + base64.StdEncoding.EncodeToString(serverSig)
	return s.send(&pgproto3.AuthenticationSASLFinal{Data: []byte(final)})
}

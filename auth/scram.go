package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"
	"github.com/xdg-go/stringprep"

	"github.com/shardgate/shardgate/sqlerr"
)

const (
	mechanism         = "SCRAM-SHA-256"
	verifierPrefix    = "SCRAM-SHA-256$"
	saltLen           = 16   // bytes, as Postgres's SCRAM_DEFAULT_SALT_LEN
	defaultIterations = 4096 // Postgres's scram_iterations default
)

// NewSCRAMVerifier computes a verifier for a plain-text password the way
// Postgres stores one in pg_authid.rolpassword
// (SCRAM-SHA-256$4096:salt$StoredKey:ServerKey, 16-byte random salt).
func NewSCRAMVerifier(password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := io.ReadFull(rand.Reader, salt); err != nil {
		return "", err
	}
	cred, err := storedCredentials(password, salt, defaultIterations)
	if err != nil {
		return "", err
	}
	return formatVerifier(cred), nil
}

func formatVerifier(c *scram.StoredCredentials) string {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("%s%d:%s$%s:%s", verifierPrefix, c.Iters, b64([]byte(c.Salt)), b64(c.StoredKey), b64(c.ServerKey))
}

// storedCredentials derives StoredKey and ServerKey (RFC 5802 §3) from a
// password. Like Postgres, the password is SASLprep-normalized when it can
// be, and used as it is otherwise.
func storedCredentials(password string, salt []byte, iters int) (*scram.StoredCredentials, error) {
	if prepped, err := stringprep.SASLprep.Prepare(password); err == nil {
		password = prepped
	}
	client, err := scram.SHA256.NewClientUnprepped("", password, "")
	if err != nil {
		return nil, err
	}
	cred, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
	if err != nil {
		return nil, err
	}
	return &cred, nil
}

// parseVerifier reads a verifier of the form
// SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (base64 salt,
// 32-byte keys), as Postgres's parse_scram_secret does.
func parseVerifier(v string) (*scram.StoredCredentials, error) {
	bad := errors.New("malformed SCRAM verifier (expected SCRAM-SHA-256$iterations:salt$storedkey:serverkey)")
	rest, ok := strings.CutPrefix(v, verifierPrefix)
	if !ok {
		return nil, bad
	}
	params, keys, ok1 := strings.Cut(rest, "$")
	is, ss, ok2 := strings.Cut(params, ":")
	sk, svk, ok3 := strings.Cut(keys, ":")
	if !ok1 || !ok2 || !ok3 {
		return nil, bad
	}
	iters, err := strconv.Atoi(is)
	if err != nil || iters < 1 {
		return nil, bad
	}
	d := base64.StdEncoding
	salt, e1 := d.DecodeString(ss)
	stored, e2 := d.DecodeString(sk)
	server, e3 := d.DecodeString(svk)
	if e1 != nil || e2 != nil || e3 != nil || len(salt) == 0 || len(stored) != sha256.Size || len(server) != sha256.Size {
		return nil, bad
	}
	return &scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(salt), Iters: iters},
		StoredKey:  stored, ServerKey: server,
	}, nil
}

// mockCredentials are what a user without usable credentials is checked
// against: derived from the user name and the Authenticator's secret, so
// the salt a client sees is the same on every attempt, as a real user's is.
func (a *Authenticator) mockCredentials(user string) *scram.StoredCredentials {
	derive := func(label string) []byte {
		h := hmac.New(sha256.New, a.secret)
		h.Write([]byte(label))
		h.Write([]byte{0})
		h.Write([]byte(user))
		return h.Sum(nil)
	}
	return &scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(derive("salt")[:saltLen]), Iters: a.mockIters},
		StoredKey:  derive("stored key"),
		ServerKey:  derive("server key"),
	}
}

// scramExchange runs SCRAM-SHA-256 (RFC 5802, RFC 7677) as Postgres does:
// the user name inside the SCRAM messages is ignored (the StartupMessage's
// counts), no channel binding is offered. A nil acct (or one without a
// verifier) is the mock exchange. A successful one returns the proof's
// ClientKey (clientKey).
func (a *Authenticator) scramExchange(c Conn, user string, acct *account) (Proof, error) {
	var cred *scram.StoredCredentials
	if acct != nil {
		cred = acct.scram
	}
	mock := cred == nil
	if mock {
		cred = a.mockCredentials(user)
	}
	proof, err := a.scramConversation(c, user, cred, mock)
	if err != nil {
		return Proof{}, err
	}
	proof.Password = acct.proof().Password
	return proof, nil
}

func (a *Authenticator) scramConversation(c Conn, user string, cred *scram.StoredCredentials, mock bool) (Proof, error) {
	fail := func(err error) (Proof, error) { return Proof{}, err }
	srv, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) { return *cred, nil })
	if err != nil {
		return fail(err)
	}
	if a.nonce != nil {
		srv = srv.WithNonceGenerator(a.nonce)
	}
	conv := srv.NewConversation()

	if err := c.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{mechanism}}); err != nil {
		return fail(err)
	}
	msg, err := c.Receive(pgproto3.AuthTypeSASL)
	if err != nil {
		return fail(err)
	}
	init, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok {
		return fail(unexpected("SASL response", msg))
	}
	if init.AuthMechanism != mechanism {
		return fail(sqlerr.New("08P01", "client selected an invalid SASL authentication mechanism"))
	}
	// Copied: the message is valid only until the next Receive.
	clientFirst := string(init.Data)
	serverFirst, err := conv.Step(clientFirst)
	if err != nil {
		return fail(scramError(user, serverFirst, err))
	}
	if conv.AuthzID() != "" {
		return fail(sqlerr.New("0A000", "client uses authorization identity, but it is not supported"))
	}
	if err := c.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)}); err != nil {
		return fail(err)
	}
	msg, err = c.Receive(pgproto3.AuthTypeSASLContinue)
	if err != nil {
		return fail(err)
	}
	resp, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return fail(unexpected("SASL response", msg))
	}
	serverFinal, err := conv.Step(string(resp.Data))
	if err != nil {
		return fail(scramError(user, serverFinal, err))
	}
	if mock || !conv.Valid() {
		return fail(failed(user))
	}
	keys, err := clientKey(cred, clientFirst, serverFirst, string(resp.Data))
	if err != nil {
		return fail(err)
	}
	return Proof{SCRAM: keys}, c.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(serverFinal)})
}

// clientKey recovers the ClientKey from a valid exchange (RFC 5802 §3):
// ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage), with
// AuthMessage = client-first-message-bare + "," + server-first-message +
// "," + client-final-message-without-proof.
func clientKey(cred *scram.StoredCredentials, clientFirst, serverFirst, clientFinal string) (*SCRAMKeys, error) {
	bad := sqlerr.New("08P01", "malformed SCRAM message")
	// client-first-message = gs2-header client-first-message-bare; the
	// GS2 header is "n,," or "y,," (an authzid was refused above).
	_, rest, ok1 := strings.Cut(clientFirst, ",")
	_, bare, ok2 := strings.Cut(rest, ",")
	i := strings.LastIndex(clientFinal, ",p=")
	if !ok1 || !ok2 || i < 0 {
		return nil, bad
	}
	proof, err := base64.StdEncoding.DecodeString(clientFinal[i+3:])
	if err != nil || len(proof) != sha256.Size {
		return nil, bad
	}
	h := hmac.New(sha256.New, cred.StoredKey)
	h.Write([]byte(bare + "," + serverFirst + "," + clientFinal[:i]))
	key := h.Sum(nil)
	for j := range key {
		key[j] ^= proof[j]
	}
	if sum := sha256.Sum256(key); !hmac.Equal(sum[:], cred.StoredKey) {
		return nil, bad
	}
	return &SCRAMKeys{Salt: []byte(cred.Salt), Iters: cred.Iters, ClientKey: key, ServerKey: cred.ServerKey}, nil
}

// scramError turns a failed conversation step into the error Postgres
// gives in the same case. serverErr is the library's RFC 5802 "e=" value.
func scramError(user, serverErr string, err error) error {
	switch serverErr {
	case scram.ErrInvalidProof:
		return failed(user)
	case scram.ErrChannelBindingNotSupported, scram.ErrUnsupportedChannelBindingType:
		return sqlerr.New("08P01", "malformed SCRAM message").
			WithDetail("The client selected SCRAM-SHA-256 without channel binding, but the SCRAM message includes channel binding data.")
	case scram.ErrChannelBindingsDontMatch:
		return sqlerr.New("08P01", "SCRAM channel binding check failed")
	case scram.ErrOtherError:
		return sqlerr.New("08P01", "invalid SCRAM response").WithDetail("%s.", err)
	}
	return sqlerr.New("08P01", "malformed SCRAM message").WithDetail("%s.", err)
}

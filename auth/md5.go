package auth

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"io"

	"github.com/jackc/pgx/v5/pgproto3"
)

// md5Exchange sends AuthenticationMD5Password and checks the answer
// against inner, "md5" + hex(md5(password + user)). An empty inner is the
// mock exchange of an unknown user: same messages, always 28P01.
func (a *Authenticator) md5Exchange(c Conn, user, inner string) error {
	var salt [4]byte
	if _, err := io.ReadFull(rand.Reader, salt[:]); err != nil {
		return err
	}
	if err := c.Send(&pgproto3.AuthenticationMD5Password{Salt: salt}); err != nil {
		return err
	}
	msg, err := c.Receive(pgproto3.AuthTypeMD5Password)
	if err != nil {
		return err
	}
	pm, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		return unexpected("password response", msg)
	}
	if inner == "" {
		return failed(user)
	}
	if subtle.ConstantTimeCompare([]byte(md5Response(inner, salt)), []byte(pm.Password)) != 1 {
		return failed(user)
	}
	return nil
}

// md5Response is what a client that knows the password answers to salt:
// "md5" + hex(md5(hex(md5(password + user)) + salt)).
func md5Response(inner string, salt [4]byte) string {
	outer := md5.Sum(append([]byte(inner[3:]), salt[:]...))
	return "md5" + hex.EncodeToString(outer[:])
}

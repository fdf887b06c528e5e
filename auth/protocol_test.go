package auth

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// A SASLInitialResponse that does not decode (its mechanism name not
// NUL-terminated, no data length) is a protocol violation, 08P01 as in Postgres, not an internal error.
func TestMalformedSASLMessage(t *testing.T) {
	a := newAuth(t, SCRAM, User{Name: "app", Password: "pencil"})
	err := exchangeRaw(t, a, "app", func(cc net.Conn) {
		receive[*pgproto3.AuthenticationSASL](t, pgproto3.NewFrontend(cc, cc))
		body := []byte("SCRAM-SHA-256") // no NUL after the mechanism, no data length
		msg := binary.BigEndian.AppendUint32([]byte{'p'}, uint32(len(body)+4))
		if _, err := cc.Write(append(msg, body...)); err != nil {
			t.Error(err)
		}
	})
	if code(err) != "08P01" || !strings.Contains(err.Error(), "malformed SASL message") {
		t.Fatalf("got %v, want 08P01 malformed SASL message", err)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A wrong password for a listed user leaves a log line, as an unknown
// user's attempt does; the password is not in it.
func TestWrongPasswordIsLogged(t *testing.T) {
	for _, m := range []Method{MD5, SCRAM} {
		var logs lockedBuffer
		a, err := New(Config{Method: m, Users: []User{{Name: "app", Password: "s3cret"}}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		client := scramClient(t, "wrong-pw", mechanism, nil)
		if m == MD5 {
			client = md5Client(t, "wrong-pw", "app")
		}
		if err := exchange(t, a, "app", client); code(err) != "28P01" {
			t.Fatalf("%s: got %v, want 28P01", m, err)
		}
		out := logs.String()
		if !strings.Contains(out, `msg="password authentication failed" user=app method=`+string(m)) {
			t.Errorf("%s: no log line for the wrong password:\n%s", m, out)
		}
		if strings.Contains(out, "wrong-pw") || strings.Contains(out, "s3cret") {
			t.Errorf("%s: a password is in the log:\n%s", m, out)
		}
	}
}

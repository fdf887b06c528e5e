package pgwire

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// frontendBytes encodes messages as a client sends them.
func frontendBytes(t *testing.T, msgs ...pgproto3.FrontendMessage) (out []byte) {
	for i := range msgs {
		b, err := msgs[i].Encode(out)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		out = b
	}
	return out
}

// stutter returns at most one byte per Read and, every other call, a
// timeout instead of data, as a read deadline would.
type stutter struct {
	data  []byte
	calls int
}

func (s *stutter) Read(p []byte) (int, error) {
	s.calls++
	if s.calls%2 == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:1], s.data)
	s.data = s.data[n:]
	return n, nil
}

func TestClientReaderResumesCutReads(t *testing.T) {
	in := frontendBytes(t,
		&pgproto3.Query{String: "SELECT 1"},
		&pgproto3.Parse{Name: "s", Query: "SELECT $1::int", ParameterOIDs: []uint32{23}},
		&pgproto3.Bind{PreparedStatement: "s", Parameters: [][]byte{[]byte("42")}},
		&pgproto3.Sync{})
	befores := 0
	r := NewClientReader(&stutter{data: in}, func() { befores++ })
	var got []string
	for {
		m, err := r.Receive()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue // resumed where it was cut
		}
		if err != nil {
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				t.Fatal(err)
			}
			break
		}
		switch m := m.(type) {
		case *pgproto3.Query:
			got = append(got, "Q "+m.String)
		case *pgproto3.Parse:
			got = append(got, "P "+m.Name+" "+m.Query)
		case *pgproto3.Bind:
			got = append(got, "B "+m.PreparedStatement+" "+string(m.Parameters[0]))
		case *pgproto3.Sync:
			got = append(got, "S")
		}
	}
	if want := "Q SELECT 1|P s SELECT $1::int|B s 42|S"; strings.Join(got, "|") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, "|"), want)
	}
	if befores < len(in) {
		t.Fatalf("before ran %d times for %d one-byte reads", befores, len(in))
	}
}

func TestClientReaderReleasesBetweenMessages(t *testing.T) {
	big := strings.Repeat("x", 3*ClientReadSize)
	in := frontendBytes(t, &pgproto3.Query{String: "SELECT 1"}, &pgproto3.Query{String: "SELECT 2"})
	r := NewClientReader(bytes.NewReader(in), nil)
	if _, err := r.Receive(); err != nil {
		t.Fatal(err)
	}
	if r.Buffered() == 0 {
		t.Fatal("the second message should be read ahead")
	}
	r.Release() // kept: a message is buffered
	if r.bufs == nil {
		t.Fatal("Release dropped a buffer with unread bytes")
	}
	m, err := r.Receive()
	if err != nil || m.(*pgproto3.Query).String != "SELECT 2" {
		t.Fatalf("second message: %v %v", m, err)
	}
	r.Release()
	if r.bufs != nil || r.big != nil {
		t.Fatal("Release kept the buffer of a reader with nothing buffered")
	}

	// A large message gets a buffer of its own, dropped once a small one
	// follows.
	r = NewClientReader(bytes.NewReader(frontendBytes(t, &pgproto3.Query{String: big}, &pgproto3.Sync{})), nil)
	m, err = r.Receive()
	if err != nil || m.(*pgproto3.Query).String != big {
		t.Fatalf("large message: %v", err)
	}
	if len(r.big) < len(big) {
		t.Fatalf("large message read without a large buffer (%d)", len(r.big))
	}
	if _, err := r.Receive(); err != nil {
		t.Fatal(err)
	}
	if r.big != nil {
		t.Fatal("the large buffer is kept after a small message")
	}
}

func TestClientReaderLimitsAndStartup(t *testing.T) {
	r := NewClientReader(bytes.NewReader(frontendBytes(t, &pgproto3.Query{String: strings.Repeat("y", 100)})), nil)
	r.SetMaxBodyLen(50)
	var tooBig *pgproto3.ExceededMaxBodyLenErr
	if _, err := r.Receive(); !errors.As(err, &tooBig) || tooBig.ActualBodyLen != 101 {
		t.Fatalf("want ExceededMaxBodyLenErr of 101 bytes, got %v", err)
	}

	r = NewClientReader(bytes.NewReader([]byte{'Q', 0, 0, 0, 3}), nil)
	if _, err := r.Receive(); err == nil || !strings.Contains(err.Error(), "invalid message length") {
		t.Fatalf("length 3: %v", err)
	}
	r = NewClientReader(bytes.NewReader([]byte{'Q', 0, 0, 0, 9, 'S'}), nil)
	if _, err := r.Receive(); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut message: %v", err)
	}
	r = NewClientReader(bytes.NewReader([]byte{'z', 0, 0, 0, 4}), nil)
	if _, err := r.Receive(); err == nil || !strings.Contains(err.Error(), "unknown message type") {
		t.Fatalf("type z: %v", err)
	}

	start := frontendBytes(t, &pgproto3.SSLRequest{}, &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "app", "database": "shop"}})
	r = NewClientReader(bytes.NewReader(append(start, frontendBytes(t, &pgproto3.PasswordMessage{Password: "pw"})...)), nil)
	if m, err := r.ReceiveStartupMessage(); err != nil {
		t.Fatal(err)
	} else if _, ok := m.(*pgproto3.SSLRequest); !ok {
		t.Fatalf("want SSLRequest, got %T", m)
	}
	if m, err := r.ReceiveStartupMessage(); err != nil {
		t.Fatal(err)
	} else if sm, ok := m.(*pgproto3.StartupMessage); !ok || sm.Parameters["user"] != "app" {
		t.Fatalf("want StartupMessage of app, got %#v", m)
	}
	if err := r.SetAuthType(pgproto3.AuthTypeCleartextPassword); err != nil {
		t.Fatal(err)
	}
	if m, err := r.Receive(); err != nil || m.(*pgproto3.PasswordMessage).Password != "pw" {
		t.Fatalf("password: %v %v", m, err)
	}
	if err := r.SetAuthType(99); err == nil {
		t.Fatal("auth type 99 accepted")
	}
	r = NewClientReader(bytes.NewReader([]byte{0, 0, 0, 8, 0, 2, 0, 0}), nil)
	if _, err := r.ReceiveStartupMessage(); err == nil || !strings.Contains(err.Error(), "unknown startup message code") {
		t.Fatalf("protocol 2.0: %v", err)
	}
}

// TestClientReaderRead: what was read ahead comes first when another
// decoder takes over the connection.
func TestClientReaderRead(t *testing.T) {
	in := frontendBytes(t, &pgproto3.Query{String: "SELECT 1"}, &pgproto3.Query{String: "SELECT 2"})
	r := NewClientReader(bytes.NewReader(in), nil)
	if _, err := r.Receive(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(rest, frontendBytes(t, &pgproto3.Query{String: "SELECT 2"})) {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

func TestClientWriterPool(t *testing.T) {
	var a, b bytes.Buffer
	w := GetClientWriter(&a)
	if w.Size() != ClientWriteSize {
		t.Fatalf("size %d", w.Size())
	}
	_, _ = w.WriteString("one")
	_ = w.Flush()
	PutClientWriter(w)
	w = GetClientWriter(&b)
	_, _ = w.WriteString("two")
	_ = w.Flush()
	if a.String() != "one" || b.String() != "two" {
		t.Fatalf("a %q b %q", a.String(), b.String())
	}
}

package proxy

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

func startupPacket(user, db string) []byte {
	body := []byte{0, 3, 0, 0}
	for _, kv := range [][2]string{{"user", user}, {"database", db}} {
		body = append(body, kv[0]...)
		body = append(body, 0)
		body = append(body, kv[1]...)
		body = append(body, 0)
	}
	body = append(body, 0)
	out := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(out, uint32(4+len(body)))
	return append(out, body...)
}

func msg(typ byte, body string) []byte {
	out := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(4+len(body)))
	return append(out, body...)
}

// FuzzSessionReadPath feeds arbitrary bytes to a session, either as the very
// first packet or after a valid startup. The proxy must answer with an
// error or close the connection; it must never panic.
func FuzzSessionReadPath(f *testing.F) {
	f.Add(false, []byte{})
	f.Add(true, msg('Q', "SELECT 1\x00"))
	f.Add(true, msg('Q', "SELECT * FROM customers WHERE id = 1\x00"))
	f.Add(true, append(msg('P', "s1\x00SELECT $1::int\x00\x00\x00"), msg('S', "")...))
	f.Add(true, msg('B', "\x00\x00\x00\x00\x00\x01\x00\x00\x00\x04abcd\x00\x00"))
	f.Add(true, msg('X', ""))
	f.Add(false, []byte{0, 0, 0, 8, 4, 210, 22, 47})
	f.Add(false, []byte{0, 0, 0, 16, 4, 210, 22, 46, 0, 0, 0, 1, 0, 0, 0, 1})
	f.Add(true, []byte{'d', 0, 0, 0, 4, 'c', 0, 0, 0, 4})
	f.Add(true, msg('Q', "BEGIN; SELECT 1; COMMIT\x00"))
	p := startProxy(f, shopTopology(""), nil)
	var panicked any
	panicHook = func(r any) { panicked = r }
	defer func() { panicHook = nil }()
	f.Fuzz(func(t *testing.T, afterStartup bool, data []byte) {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if afterStartup {
			if _, err := c.Write(startupPacket("fuzz", "shop")); err != nil {
				t.Fatal(err)
			}
		}
		_, _ = c.Write(data)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		_, _ = io.ReadAll(c)
		if panicked != nil {
			t.Fatalf("session panicked: %v", fmt.Sprint(panicked))
		}
	})
}

package pgwire

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

func TestTypeSet(t *testing.T) {
	s := Types("DCd")
	for _, c := range []byte("DCd") {
		if !s.Has(c) {
			t.Errorf("%c missing", c)
		}
	}
	for _, c := range []byte("ZETc1\x00\xff") {
		if s.Has(c) {
			t.Errorf("%q present", c)
		}
	}
	if s.Without('C').Has('C') || !s.Without('C').Has('D') || s.With(0) != s || s.Without(0xff) != s {
		t.Error("With/Without")
	}
}

// TestReaderRun: a run is the complete messages of the given types at the
// head of the buffer, in wire form; it stops at another type, at a
// message cut by the buffer's end, and never reads from the connection.
func TestReaderRun(t *testing.T) {
	data := messages(3, 10) // D D D Z
	r := NewReader(bytes.NewReader(data))
	if run := r.Run(Types("D")); len(run) != 0 {
		t.Fatalf("nothing read yet: run of %d bytes", len(run))
	}
	m, err := r.Next()
	if err != nil || m.Type != 'D' {
		t.Fatalf("first: %c %v", m.Type, err)
	}
	run := r.Run(Types("D"))
	if !bytes.Equal(run, data[15:45]) {
		t.Fatalf("run %q, want the two DataRows after the first %q", run, data[15:45])
	}
	if run := r.Run(Types("D")); len(run) != 0 {
		t.Fatalf("at ReadyForQuery: run of %d bytes", len(run))
	}
	if m, err := r.Next(); err != nil || m.Type != 'Z' || string(m.Body) != "I" {
		t.Fatalf("after the run: %c %q %v", m.Type, m.Body, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}

	// A message cut by the end of what is buffered ends the run; the
	// rest of it is read by Next.
	big := messages(2, 20*1024) // two 20 KiB rows: the second does not fit the 32 KiB buffer with the first
	r = NewReader(bytes.NewReader(big))
	if m, err := r.Next(); err != nil || m.Type != 'D' {
		t.Fatalf("big first: %c %v", m.Type, err)
	}
	if run := r.Run(Types("DZ")); len(run) != 0 {
		t.Fatalf("cut message: run of %d bytes", len(run))
	}
	if m, err := r.Next(); err != nil || m.Type != 'D' || len(m.Body) != 20*1024 || m.Body[0] != 1 {
		t.Fatalf("big second: %c %d %v", m.Type, len(m.Body), err)
	}
	if run := r.Run(Types("DZ")); string(run) != "Z\x00\x00\x00\x05I" {
		t.Fatalf("run %q, want ReadyForQuery", run)
	}

	// An invalid length is not part of a run: Next reports it.
	bad := append(messages(1, 4), 'D', 0, 0, 0, 2)
	r = NewReader(bytes.NewReader(bad))
	if m, err := r.Next(); err != nil || m.Type != 'D' {
		t.Fatalf("bad first: %c %v", m.Type, err)
	}
	if run := r.Run(Types("DZ")); string(run) != "Z\x00\x00\x00\x05I" {
		t.Fatalf("run %q before the bad message", run)
	}
	if _, err := r.Next(); err == nil {
		t.Fatal("invalid length accepted")
	}
}

// BenchmarkRelayRows relays 1,000 DataRows of 100 bytes and a
// ReadyForQuery to a client buffer: per message (Next and WriteRaw, as
// the relay did), and in runs (Run and one Write per run).
func BenchmarkRelayRows(b *testing.B) {
	data := messages(1000, 100)
	src := bytes.NewReader(data)
	r := NewReader(src)
	out := bufio.NewWriterSize(io.Discard, 32*1024)
	for _, bulk := range []bool{false, true} {
		name := "per message"
		if bulk {
			name = "runs"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				src.Reset(data)
				for {
					if bulk {
						if run := r.Run(Types("D")); len(run) > 0 {
							_, _ = out.Write(run)
							continue
						}
					}
					m, err := r.Next()
					if err != nil {
						b.Fatal(err)
					}
					if m.Type == 'Z' {
						break
					}
					_ = WriteRaw(out, m.Type, m.Body)
				}
			}
		})
	}
}

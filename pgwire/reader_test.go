package pgwire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// messages is n DataRows of body size each, then a ReadyForQuery.
func messages(n, size int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, 'D', 0, 0, 0, 0)
		b[len(b)-4], b[len(b)-3], b[len(b)-2], b[len(b)-1] = byte((size+4)>>24), byte((size+4)>>16), byte((size+4)>>8), byte(size+4)
		for j := 0; j < size; j++ {
			b = append(b, byte(i+j))
		}
	}
	return append(b, 'Z', 0, 0, 0, 5, 'I')
}

// TestReaderNext reads small messages in place and large ones through
// its own buffer, and reports a message cut short as ErrUnexpectedEOF.
func TestReaderNext(t *testing.T) {
	for _, size := range []int{0, 10, 40 * 1024, 100 * 1024} {
		data := messages(3, size)
		r := NewReader(bytes.NewReader(data))
		for i := 0; i < 3; i++ {
			m, err := r.Next()
			if err != nil || m.Type != 'D' || len(m.Body) != size {
				t.Fatalf("size %d, message %d: %c %d %v", size, i, m.Type, len(m.Body), err)
			}
			for j, c := range m.Body {
				if c != byte(i+j) {
					t.Fatalf("size %d, message %d: byte %d is %d", size, i, j, c)
				}
			}
		}
		if r.Buffered() != 6 && len(data) < 32*1024 {
			t.Fatalf("size %d: %d bytes buffered, want the 6 of ReadyForQuery", size, r.Buffered())
		}
		if m, err := r.Next(); err != nil || m.Type != 'Z' || string(m.Body) != "I" {
			t.Fatalf("size %d: ReadyForQuery: %c %q %v", size, m.Type, m.Body, err)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("size %d: after the last message: %v, want EOF", size, err)
		}
	}
	for _, cut := range []int{3, 8} {
		r := NewReader(bytes.NewReader(messages(1, 10)[:cut]))
		if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut at %d: %v, want ErrUnexpectedEOF", cut, err)
		}
	}
}

// BenchmarkReaderNext reads 100-byte DataRows, as a relay does.
func BenchmarkReaderNext(b *testing.B) {
	data := messages(1000, 100)
	src := bytes.NewReader(data)
	r := NewReader(src)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		src.Reset(data)
		for {
			m, err := r.Next()
			if err != nil {
				b.Fatal(err)
			}
			if m.Type == 'Z' {
				break
			}
		}
	}
}

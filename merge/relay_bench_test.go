package merge

import (
	"bufio"
	"io"
	"testing"

	"github.com/shardgate/shardgate/pgwire"
)

// BenchmarkRelayDataRow is the relay of one backend's DataRow to the
// client's buffer, as a single-shard read passes its rows on.
func BenchmarkRelayDataRow(b *testing.B) {
	out := bufio.NewWriterSize(io.Discard, 32*1024)
	var enc pgwire.Encoder
	enc.Reset(out)
	rl := NewRelay(WireClient{Enc: &enc, Out: out}, false, nil)
	row := pgwire.RawMessage{Type: 'D', Body: []byte("\x00\x01\x00\x00\x00\x04\x00\x00\x00\x2a")}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		rl.Handle(nil, nil, row)
	}
	_ = out.Flush()
}

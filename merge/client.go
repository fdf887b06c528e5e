package merge

import (
	"bufio"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
)

// WireClient is a Client that writes to a client connection's buffer,
// flushing it every 64 KiB.
type WireClient struct {
	Enc *pgwire.Encoder // writes to Out
	Out *bufio.Writer
	// Param passes on a parameter change; Failed is ShardFailed.
	Param  func(*pgproto3.ParameterStatus)
	Failed func(*backend.Conn)
}

func (c WireClient) flushFull() {
	if c.Out.Buffered() > 64*1024 {
		_ = c.Out.Flush()
	}
}

// SendRow buffers a merged row.
func (c WireClient) SendRow(dr *pgproto3.DataRow) error {
	if err := c.Enc.Send(dr); err != nil {
		return err
	}
	c.flushFull()
	return nil
}

// SendRaw buffers a shard's message as it came.
func (c WireClient) SendRaw(typ byte, body []byte) {
	if typ == 'C' {
		c.Enc.TagRows += pgwire.TagRows(body)
	}
	_ = pgwire.WriteRaw(c.Out, typ, body)
	c.flushFull()
}

// SendRun buffers messages of a shard in wire form, as they came (see
// Relay.Bulk): one copy for the whole run.
func (c WireClient) SendRun(msgs []byte) {
	c.Enc.TagRows += pgwire.RunTagRows(msgs)
	_, _ = c.Out.Write(msgs)
	c.flushFull()
}

// ParameterStatus passes on a parameter change.
func (c WireClient) ParameterStatus(ps *pgproto3.ParameterStatus) { c.Param(ps) }

// ShardFailed marks the connection as answering nothing before Sync.
func (c WireClient) ShardFailed(b *backend.Conn) { c.Failed(b) }

// Flush writes what is buffered for the client.
func (c WireClient) Flush() error { return c.Out.Flush() }

package merge

import (
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgcopy"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// CopyOut runs COPY ... TO STDOUT (sql, or a target's own SQL) on every
// target's connection and sends the client one COPY answer: one
// CopyOutResponse, every cluster's data in target order (one header line
// for HEADER, one binary header and trailer) and one CopyDone. It returns
// the summed row count for the command tag, or the first error.
func CopyOut(co *planner.CopyOut, sql string, targets []planner.Target, conns []*backend.Conn, client Client) (int64, error) {
	if err := sendQueries(sql, targets, conns); err != nil {
		return 0, err
	}
	binaryFmt := co.Options.Format == planner.CopyBinary
	header := co.Options.Header && !binaryFmt
	var first error
	var total int64
	started := false
	for i, b := range conns {
		firstData := true
		for {
			m, err := b.Read()
			if err != nil {
				if first == nil {
					first = pgwire.ConnLost(b.Cluster(), err)
				}
				break
			}
			if m.Type == 'Z' {
				if len(m.Body) > 0 {
					b.TxStatus = m.Body[0]
				}
				break
			}
			switch m.Type {
			case 'H':
				if !started && first == nil {
					started = true
					client.SendRaw('H', m.Body)
				}
			case 'd':
				if first != nil {
					continue
				}
				body := m.Body
				if firstData {
					firstData = false
					if binaryFmt {
						n, err := pgcopy.BinaryHeaderLen(body, true)
						if err != nil {
							first = sqlerr.New(sqlerr.ProtocolViolation, "cluster %s sent a malformed binary COPY header", b.Cluster())
							continue
						}
						if i == 0 {
							client.SendRaw('d', body[:n])
						}
						body = body[n:]
					} else if header && i > 0 {
						continue // the first cluster's header stands for all
					}
				}
				if binaryFmt && (len(body) == 0 || len(body) == 2 && body[0] == 0xff && body[1] == 0xff) {
					continue // the trailer: one at the end
				}
				client.SendRaw('d', body)
			case 'c':
				// One CopyDone, after every cluster's data.
			case 'C':
				_, n, _ := pgwire.SplitTag(m.Body)
				total += n
			case 'E':
				if first == nil {
					first = pgwire.NewBackendError(m.Body, b.Cluster(), targets[i].Shards)
				}
			case 'N':
				client.SendRaw(m.Type, m.Body)
			case 'S':
				var ps pgproto3.ParameterStatus
				if ps.Decode(m.Body) == nil {
					b.Params[ps.Name] = ps.Value
				}
			case 'G':
				// Not a COPY TO after all (cannot happen: the planner saw TO).
				_ = b.Send(&pgproto3.CopyFail{Message: "shardgate: COPY FROM not expected"})
				_ = b.Flush()
			}
		}
	}
	if first != nil {
		return 0, first
	}
	if binaryFmt {
		client.SendRaw('d', []byte{0xff, 0xff})
	}
	if started {
		client.SendRaw('c', nil)
	}
	return total, nil
}

package merge

import "github.com/shardgate/shardgate/planner"

// Reorder puts the RETURNING rows of an INSERT split over several
// clusters back in the order Postgres would return them: insertion order,
// which is the order of the statement's VALUES rows. Each result stream
// (a target's statement, or each of its per-row statements) inserts known
// statement rows in order (planner.Target.Rows), and a backend returns
// RETURNING rows in the order it inserts them, so the j-th row of a stream
// belongs to its j-th statement row whenever the counts match; a stream of
// one statement row owns all it returns (none, when ON CONFLICT skipped
// it). The rows are held in memory until the statement completes: at most
// as many as the statement has VALUES rows, which are in memory anyway.
type Reorder struct {
	streams []orderStream
	cur     int
}

type orderStream struct {
	rows []int    // the statement rows the stream inserts, in order
	data [][]byte // the DataRow bodies it returned
}

// NewReorder returns nil unless the targets ask for reordering.
func NewReorder(targets []planner.Target) *Reorder {
	var o *Reorder
	for _, t := range targets {
		if t.Rows != nil {
			o = &Reorder{}
			break
		}
	}
	if o == nil {
		return nil
	}
	for _, t := range targets {
		if len(t.Each) > 0 {
			for _, e := range t.Each {
				o.streams = append(o.streams, orderStream{rows: e.Rows})
			}
			continue
		}
		o.streams = append(o.streams, orderStream{rows: t.Rows})
	}
	return o
}

// Add holds a copy of a DataRow body of the current stream.
func (o *Reorder) Add(body []byte) {
	if o.cur >= len(o.streams) {
		o.streams = append(o.streams, orderStream{})
	}
	s := &o.streams[o.cur]
	s.data = append(s.data, append([]byte(nil), body...))
}

// Next ends the current stream (its CommandComplete arrived).
func (o *Reorder) Next() { o.cur++ }

// Emit hands the held DataRow bodies to send in statement order.
func (o *Reorder) Emit(send func(dataRow []byte)) {
	n := 0
	for _, s := range o.streams {
		for _, r := range s.rows {
			n = max(n, r+1)
		}
	}
	byRow := make([][][]byte, n+1) // the last slot: rows no statement row claims
	for _, s := range o.streams {
		switch {
		case len(s.rows) == len(s.data):
			for j, d := range s.data {
				byRow[s.rows[j]] = append(byRow[s.rows[j]], d)
			}
		case len(s.rows) > 0:
			// Fewer rows than inserted (a trigger or rule dropped some):
			// keep the stream's rows together where its first row is.
			byRow[s.rows[0]] = append(byRow[s.rows[0]], s.data...)
		default:
			byRow[n] = append(byRow[n], s.data...)
		}
	}
	for _, rows := range byRow {
		for _, d := range rows {
			send(d)
		}
	}
}

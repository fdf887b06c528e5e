package pgcopy

// LineMap maps the lines a cluster counts in the part of the stream it
// received to the lines of the client's stream, for the most recent rows
// (a cluster reports an error on a row it is reading, which is at most a
// few socket buffers behind what the proxy sent).
type LineMap struct {
	shard   []int64 // the cluster's line count after each row
	input   []int64 // the row's (last) line in the client's stream
	count   int64   // lines the cluster has received
	dropped bool    // older rows have left the window
}

// lineMapWindow bounds the rows a LineMap remembers (16 bytes each).
const lineMapWindow = 1 << 19

// Add records a row the cluster received: it advances the cluster's count
// by lines and was line inputLine of the client's stream.
func (m *LineMap) Add(lines int, inputLine int64) {
	m.count += int64(lines)
	if len(m.shard) >= lineMapWindow {
		half := len(m.shard) / 2
		m.shard = m.shard[:copy(m.shard, m.shard[half:])]
		m.input = m.input[:copy(m.input, m.input[half:])]
		m.dropped = true
	}
	m.shard = append(m.shard, m.count)
	m.input = append(m.input, inputLine)
}

// Lookup returns the line of the client's stream that the cluster counts
// as its line n.
func (m *LineMap) Lookup(n int64) (int64, bool) {
	lo, hi := 0, len(m.shard)
	for lo < hi {
		mid := (lo + hi) / 2
		if m.shard[mid] < n {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(m.shard) || lo == 0 && m.dropped && m.shard[0] != n {
		return 0, false
	}
	// A csv row with quoted line breaks ends at shard[lo]; its other
	// lines are offset alike.
	return m.input[lo] - (m.shard[lo] - n), true
}

package merge

import (
	"container/heap"
	"sort"

	"github.com/shardgate/shardgate/pgvalue"
)

// The pipeline stages besides Aggregate: each is a rowSource pulling from
// the shard streams or from the stage below.

// concatSource reads the shards one after the other.
type concatSource struct {
	streams []*Stream
	i       int
}

func (c *concatSource) next() ([][]byte, error) {
	for c.i < len(c.streams) {
		row, err := c.streams[c.i].next()
		if err != nil || row != nil {
			return row, err
		}
		c.i++
	}
	return nil, nil
}

// mergeSource is the k-way merge of MergeSort: a heap of one row per
// shard, each shard sorted by the same keys.
type mergeSource struct {
	streams []*Stream
	keys    []sortCol
	heads   mergeHeap
	started bool
	pending int // the shard whose row was returned last: read its next one
}

type mergeHead struct {
	row   [][]byte
	vals  []pgvalue.Value
	shard int
}

type mergeHeap struct {
	items []*mergeHead
	keys  []sortCol
}

func (h *mergeHeap) Len() int { return len(h.items) }

func (h *mergeHeap) Less(i, j int) bool {
	c := compareRows(h.keys, h.items[i].vals, h.items[j].vals)
	if c != 0 {
		return c < 0
	}
	return h.items[i].shard < h.items[j].shard
}

func (h *mergeHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }

func (h *mergeHeap) Push(x any) { h.items = append(h.items, x.(*mergeHead)) }

func (h *mergeHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

func (m *mergeSource) pull(i int) error {
	row, err := m.streams[i].next()
	if err != nil || row == nil {
		return err
	}
	vals, err := decodeKeys(row, m.keys)
	if err != nil {
		return err
	}
	heap.Push(&m.heads, &mergeHead{row: row, vals: vals, shard: i})
	return nil
}

func (m *mergeSource) next() ([][]byte, error) {
	if !m.started {
		m.started = true
		m.heads.keys = m.keys
		for i := range m.streams {
			if err := m.pull(i); err != nil {
				return nil, err
			}
		}
	}
	if m.pending >= 0 {
		if err := m.pull(m.pending); err != nil {
			return nil, err
		}
		m.pending = -1
	}
	if m.heads.Len() == 0 {
		return nil, nil
	}
	h := heap.Pop(&m.heads).(*mergeHead)
	m.pending = h.shard
	return h.row, nil
}

// sortSource sorts its input in memory (an Aggregate's groups).
type sortSource struct {
	in   rowSource
	keys []sortCol
	rows [][][]byte
	pos  int
	done bool
}

func (s *sortSource) next() ([][]byte, error) {
	if !s.done {
		s.done = true
		type item struct {
			row  [][]byte
			vals []pgvalue.Value
		}
		var items []item
		for {
			row, err := s.in.next()
			if err != nil {
				return nil, err
			}
			if row == nil {
				break
			}
			vals, err := decodeKeys(row, s.keys)
			if err != nil {
				return nil, err
			}
			items = append(items, item{row, vals})
		}
		sort.SliceStable(items, func(i, j int) bool { return compareRows(s.keys, items[i].vals, items[j].vals) < 0 })
		s.rows = make([][][]byte, len(items))
		for i, it := range items {
			s.rows[i] = it.row
		}
	}
	if s.pos >= len(s.rows) {
		return nil, nil
	}
	s.pos++
	return s.rows[s.pos-1], nil
}

// distinctSource drops repeated rows. adjacent: equal keys come one after
// the other (DISTINCT ON over a MergeSort): keep the first of each. run:
// the input is sorted by these keys, so duplicates sit in one run of equal
// sort keys and only that run is remembered. Otherwise every key seen is.
type distinctSource struct {
	in       rowSource
	key      []sortCol
	adjacent bool
	run      []sortCol
	seen     map[string]struct{}
	prev     []byte
	prevRun  []byte
	buf      []byte
}

func (d *distinctSource) next() ([][]byte, error) {
	for {
		row, err := d.in.next()
		if err != nil || row == nil {
			return row, err
		}
		d.buf, err = rowKey(d.buf[:0], row, d.key)
		if err != nil {
			return nil, err
		}
		if d.adjacent {
			if d.prev != nil && string(d.prev) == string(d.buf) {
				continue
			}
			d.prev = append(d.prev[:0], d.buf...)
			return row, nil
		}
		if d.run != nil {
			runKey, err := rowKey(nil, row, d.run)
			if err != nil {
				return nil, err
			}
			if d.prevRun == nil || string(runKey) != string(d.prevRun) {
				d.prevRun = runKey
				clear(d.seen)
			}
		}
		if _, dup := d.seen[string(d.buf)]; dup {
			continue
		}
		d.seen[string(d.buf)] = struct{}{}
		return row, nil
	}
}

// limitSource skips offset rows, passes count (all if negative), then
// stops reading; with ties (FETCH FIRST ... WITH TIES) it also passes the
// rows that sort equal to the last one.
type limitSource struct {
	in            rowSource
	offset, count int64
	seen          int64
	ties          []sortCol
	last          []pgvalue.Value // WITH TIES: the sort keys of the last row passed
	done          bool
}

func (l *limitSource) next() ([][]byte, error) {
	for !l.done {
		full := l.count >= 0 && l.seen >= l.offset && l.seen-l.offset >= l.count
		if full && (l.ties == nil || l.last == nil) {
			l.done = true
			break
		}
		row, err := l.in.next()
		if err != nil || row == nil {
			return row, err
		}
		l.seen++
		if l.seen <= l.offset {
			continue
		}
		if l.ties != nil {
			vals, err := decodeKeys(row, l.ties)
			if err != nil {
				return nil, err
			}
			if full && compareRows(l.ties, vals, l.last) != 0 {
				l.done = true
				break
			}
			l.last = vals
		}
		return row, nil
	}
	return nil, nil
}

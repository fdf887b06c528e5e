package stats

import (
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Queries are the statistics of client statements by fingerprint (the
// statement's normalized text, literals replaced by $n or ?): what SHOW
// QUERIES, `shardgate status queries` and /metrics' top queries read.
//
// Memory is bounded by Max fingerprints. A new fingerprint over the bound
// evicts the least recently used of evictSample entries picked at random
// (sampled LRU, as Redis does): the hot path never touches a shared list,
// it only stores its last-use second in the entry.
//
// The hot path costs no map lookup: the caller keeps the *Query in its
// plan (planner.Plan.QueryStats) and counts with atomic adds; Live tells it
// when the entry was evicted or reset and must be looked up again.
type Queries struct {
	max int

	mu     sync.Mutex
	byText map[string]*Query
	list   []*Query // byText's values, for sampling
}

// evictSample is how many entries an eviction compares.
const evictSample = 8

// NewQueries keeps the statistics of at most max fingerprints; max <= 0
// returns nil, which keeps none (every method of a nil *Queries is a no-op).
func NewQueries(max int) *Queries {
	if max <= 0 {
		return nil
	}
	return &Queries{max: max, byText: map[string]*Query{}}
}

// Max is the bound on fingerprints (0 when q is nil: statistics off).
func (q *Queries) Max() int {
	if q == nil {
		return 0
	}
	return q.max
}

// Get returns the entry of fingerprint text, making it (and evicting one
// if full) when new.
func (q *Queries) Get(text string) *Query {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e := q.byText[text]; e != nil {
		return e
	}
	if len(q.list) >= q.max {
		q.evictLocked()
	}
	e := &Query{Text: text, ID: fingerprintID(text), idx: len(q.list)}
	e.last.Store(time.Now().Unix())
	q.byText[text] = e
	q.list = append(q.list, e)
	return e
}

// evictLocked drops the least recently used of a few entries picked at
// random.
func (q *Queries) evictLocked() {
	var victim *Query
	for i := 0; i < evictSample && i < len(q.list); i++ {
		e := q.list[rand.IntN(len(q.list))]
		if victim == nil || e.last.Load() < victim.last.Load() {
			victim = e
		}
	}
	q.removeLocked(victim)
}

func (q *Queries) removeLocked(e *Query) {
	e.gone.Store(true)
	delete(q.byText, e.Text)
	last := q.list[len(q.list)-1]
	q.list[e.idx], last.idx = last, e.idx
	q.list = q.list[:len(q.list)-1]
}

// Reset forgets every fingerprint (RESET QUERIES).
func (q *Queries) Reset() {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.list {
		e.gone.Store(true)
	}
	q.byText, q.list = map[string]*Query{}, nil
}

// Snapshot returns a copy of every entry's figures, in no order.
func (q *Queries) Snapshot() []QuerySnapshot {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	list := slices.Clone(q.list)
	q.mu.Unlock()
	out := make([]QuerySnapshot, 0, len(list))
	for _, e := range list {
		out = append(out, e.snapshot())
	}
	return out
}

// fingerprintID is a stable id of a fingerprint: 16 hex digits of its
// FNV-1a hash (the same across restarts and proxies).
func fingerprintID(text string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(text))
	return strconv.FormatUint(h.Sum64()|1<<63, 16)
}

// Query is one fingerprint's statistics. Every counter is atomic: sessions
// add to it concurrently.
type Query struct {
	Text, ID string
	idx      int // in Queries.list, under Queries.mu
	gone     atomic.Bool

	calls, errors, rows   atomic.Uint64
	totalNs, maxNs        atomic.Uint64
	shards, maxShards     atomic.Uint64
	poolWaitNs, cacheHits atomic.Uint64
	routes                atomic.Uint32 // bit i: route kind i seen
	last                  atomic.Int64  // unix second of the last call
	hist                  [histBuckets]atomic.Uint64
	errMu                 sync.Mutex
	errClasses            map[string]uint64 // under errMu
	_                     [0]func()         // not comparable
}

// Live reports whether e is still the entry of its fingerprint (not
// evicted, not reset): a caller that keeps e must look it up again when not.
func (e *Query) Live() bool { return !e.gone.Load() }

// CacheHit counts a plan cache lookup of the fingerprint that found a plan.
func (e *Query) CacheHit() { e.cacheHits.Add(1) }

// Call is one statement of the fingerprint as the proxy ran it.
type Call struct {
	Duration time.Duration
	Shards   int   // targets it ran on
	Rows     int64 // rows its command tags count
	PoolWait time.Duration
	Route    int    // route kind, an index of Metrics.Routes
	SQLState string // "" for success
	Now      time.Time
}

// Observe adds one call.
func (e *Query) Observe(c Call) {
	e.calls.Add(1)
	ns := uint64(max(c.Duration, 0))
	e.totalNs.Add(ns)
	maxUp(&e.maxNs, ns)
	e.hist[histBucket(ns)].Add(1)
	if c.Rows > 0 {
		e.rows.Add(uint64(c.Rows))
	}
	if c.Shards > 0 {
		e.shards.Add(uint64(c.Shards))
		maxUp(&e.maxShards, uint64(c.Shards))
	}
	if c.PoolWait > 0 {
		e.poolWaitNs.Add(uint64(c.PoolWait))
	}
	if bit := uint32(1) << (c.Route & 31); e.routes.Load()&bit == 0 {
		e.routes.Or(bit)
	}
	if s := c.Now.Unix(); e.last.Load() != s {
		e.last.Store(s)
	}
	if c.SQLState != "" {
		e.errors.Add(1)
		class := c.SQLState
		if len(class) > 2 {
			class = class[:2]
		}
		e.errMu.Lock()
		if e.errClasses == nil {
			e.errClasses = map[string]uint64{}
		}
		e.errClasses[class]++
		e.errMu.Unlock()
	}
}

func maxUp(a *atomic.Uint64, v uint64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// QuerySnapshot is a copy of one fingerprint's figures.
type QuerySnapshot struct {
	Text, ID                     string
	Calls, Errors, Rows          uint64
	Total, Max, P99, PoolWait    time.Duration
	Shards, MaxShards, CacheHits uint64
	Routes                       uint32 // bit i: route kind i seen
	ErrorClasses                 map[string]uint64
	LastCall                     time.Time
}

// Mean is the mean duration of a call (0 for none).
func (s QuerySnapshot) Mean() time.Duration {
	if s.Calls == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Calls)
}

// MeanShards is the mean number of targets of a call.
func (s QuerySnapshot) MeanShards() float64 {
	if s.Calls == 0 {
		return 0
	}
	return float64(s.Shards) / float64(s.Calls)
}

func (e *Query) snapshot() QuerySnapshot {
	s := QuerySnapshot{Text: e.Text, ID: e.ID, Calls: e.calls.Load(), Errors: e.errors.Load(), Rows: e.rows.Load(),
		Total: time.Duration(e.totalNs.Load()), Max: time.Duration(e.maxNs.Load()), PoolWait: time.Duration(e.poolWaitNs.Load()),
		Shards: e.shards.Load(), MaxShards: e.maxShards.Load(), CacheHits: e.cacheHits.Load(), Routes: e.routes.Load(),
		LastCall: time.Unix(e.last.Load(), 0)}
	var counts [histBuckets]uint64
	for i := range counts {
		counts[i] = e.hist[i].Load()
	}
	s.P99 = time.Duration(quantile(&counts, 0.99))
	if s.P99 > s.Max {
		s.P99 = s.Max // the bucket's middle may lie above the largest call
	}
	e.errMu.Lock()
	if len(e.errClasses) > 0 {
		s.ErrorClasses = make(map[string]uint64, len(e.errClasses))
		for k, v := range e.errClasses {
			s.ErrorClasses[k] = v
		}
	}
	e.errMu.Unlock()
	return s
}

// The latency histogram is log-linear over units of 1024 ns (about a
// microsecond): values below 8 units have a bucket each, and every power
// of two above is split into 8 equal buckets, up to 2^28 units (about
// 275 s; longer calls share the last bucket). A quantile is the middle of
// its bucket, so it is within 1/16 (6.25 %) of the true value; each entry
// keeps histBuckets counters (1.6 KiB).
const (
	histSub     = 3 // bits of sub-bucket: 8 per power of two
	histTop     = 28
	histBuckets = (histTop-histSub)<<histSub + 1<<histSub
)

func histBucket(ns uint64) int {
	v := ns >> 10
	if v < 1<<histSub {
		return int(v)
	}
	e := bits.Len64(v) - 1 // >= histSub
	if e >= histTop {
		return histBuckets - 1
	}
	sub := int(v>>(e-histSub)) & (1<<histSub - 1)
	return (e-histSub+1)<<histSub + sub
}

// histLow is the lowest value, in ns, of bucket i, and histWidth its width.
func histLow(i int) (low, width uint64) {
	if i < 1<<histSub {
		return uint64(i) << 10, 1 << 10
	}
	e := i>>histSub + histSub - 1
	sub := uint64(i & (1<<histSub - 1))
	unit := uint64(1) << (e - histSub)
	return (uint64(1)<<e + sub*unit) << 10, unit << 10
}

// quantile is the middle of the bucket that holds the call of nearest rank
// q (the largest of fewer than 100 calls, for q 0.99).
func quantile(counts *[histBuckets]uint64, q float64) uint64 {
	var n uint64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(n))), 1) // nearest rank, 1-based
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			low, width := histLow(i)
			return low + width/2
		}
	}
	return 0
}

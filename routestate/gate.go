package routestate

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// MaxBuffered bounds the statements one proxy holds for a switch at once;
// the next ones are not held.
const MaxBuffered = 10000

// Gate holds a proxy's statements on the tables of a buffer request while
// a switch flips the routing (State.Buffer). The Follower arms it when a
// revision carries a request and releases it when a later revision drops
// the request; a statement held past the request's deadline goes on. The
// proxy calls Wait before it plans a statement; unarmed, Wait costs one
// atomic load.
type Gate struct {
	armed    atomic.Bool
	seq      atomic.Uint64   // counts the arms (Seq)
	inflight [2]atomic.Int64 // statements past the gate, by seq's parity (Enter)

	mu       sync.Mutex
	req      *BufferRequest
	words    []string // the request's tables' bare names, lower case
	released chan struct{}
	acks     map[string]time.Time // request id -> when armed
	waiting  int
	stats    GateStats
	waits    []time.Duration // of the held statements answered, hold to answer (Answered)
	settled  func()          // called once every held statement is answered after the release
	onArm    func(*BufferRequest)
}

// GateStats are a proxy's figures of its last buffer.
type GateStats struct {
	Request   string        `json:"request,omitempty"`
	ArmedAt   time.Time     `json:"armed_at"`
	Released  time.Time     `json:"released"`
	FirstHeld time.Time     `json:"first_held"` // the first statement held
	Buffered  int64         `json:"buffered"`   // statements held
	MaxHeld   time.Duration `json:"max_held"`   // the longest one statement waited
	// Of the held statements answered (Answered): how many, when the first
	// was, and their waits from the hold to the answer — the wait the
	// clients felt, the new shards' answer included.
	Answered      int64         `json:"answered"`
	FirstAnswered time.Time     `json:"first_answered"`
	WaitP50       time.Duration `json:"wait_p50"`
	WaitP99       time.Duration `json:"wait_p99"`
	WaitMax       time.Duration `json:"wait_max"`
}

// NewGate returns an unarmed gate.
func NewGate() *Gate { return &Gate{acks: map[string]time.Time{}} }

// Request arms the gate for r, or releases it when r is nil or another
// request than the one armed.
func (g *Gate) Request(r *BufferRequest) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r != nil && g.req != nil && r.ID == g.req.ID && time.Now().Before(r.Deadline) {
		return
	}
	if g.req != nil {
		close(g.released)
		g.req, g.words = nil, nil
		g.stats.Released = time.Now()
		if !g.stats.FirstHeld.IsZero() {
			// The first statement held waited the longest.
			g.stats.MaxHeld = max(g.stats.MaxHeld, g.stats.Released.Sub(g.stats.FirstHeld))
		}
		g.armed.Store(false)
	}
	if r == nil || !time.Now().Before(r.Deadline) {
		return
	}
	if _, done := g.acks[r.ID]; done {
		return // released already (a revision seen again)
	}
	g.req, g.released = r, make(chan struct{})
	g.words = nil
	for _, t := range r.Tables {
		g.words = append(g.words, strings.ToLower(t[strings.LastIndexByte(t, '.')+1:]))
	}
	now := time.Now()
	g.stats = GateStats{Request: r.ID, ArmedAt: now}
	g.waits = g.waits[:0]
	if g.onArm != nil {
		go g.onArm(r)
	}
	g.armed.Store(true)
	// Armed before the arming's number moves on: a statement that saw the
	// gate unarmed entered under the previous number (Enter), and is waited
	// for — bounded, below the switch's acknowledgement timeout — before
	// the proxy acknowledges, so none reaches the old shards after their
	// write block.
	prev := g.seq.Add(1) - 1
	for deadline := now.Add(drainWait); g.inflight[prev&1].Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	g.acks = map[string]time.Time{r.ID: time.Now()}
}

// drainWait bounds how long an arming waits for the statements that
// passed the gate before it (a batch its client paused mid-way is one).
const drainWait = 300 * time.Millisecond

// Enter counts a statement in flight (before the gate's check, Hold) until
// Leave with what Enter returned.
func (g *Gate) Enter() uint64 {
	if g == nil {
		return 0
	}
	s := g.seq.Load()
	g.inflight[s&1].Add(1)
	return s
}

// Leave ends what Enter began.
func (g *Gate) Leave(s uint64) {
	if g != nil {
		g.inflight[s&1].Add(-1)
	}
}

// acked is the proxies.acked value: the request armed, with when.
func (g *Gate) acked() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	data, _ := json.Marshal(g.acks)
	return string(data)
}

// Stats returns the figures of the gate's last buffer.
func (g *Gate) Stats() GateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stats
	if len(g.waits) > 0 {
		w := slices.Clone(g.waits)
		slices.Sort(w)
		st.WaitP50, st.WaitP99, st.WaitMax = w[len(w)/2], w[len(w)*99/100], w[len(w)-1]
	}
	return st
}

// Seq counts the times the gate was armed: a transaction that records it
// at its start knows, when the gate is armed, whether it began before.
func (g *Gate) Seq() uint64 {
	if g == nil {
		return 0
	}
	return g.seq.Load()
}

// Hold holds the caller while the gate is armed and one of the texts
// (statements' SQL, produced only when armed) may write a table of the
// request (reads go on: the source's write block lets them run), until the
// request is released or its deadline passes; the caller then plans on the
// routing in force. A statement of a transaction that ran statements
// before the gate was armed (openedBefore: its Seq then differs) is not
// held: it finishes on the old routing, and the switch waits for it before
// it blocks the source's writes. One opened since, or that has not run a
// statement yet, is held like any other statement: it has written nothing
// of the request's tables. Past MaxBuffered held
// statements, a statement is not held (the source's write block then holds
// it).
//
// It returns when the statement began to be held (zero if it was not):
// the caller passes it to Answered once the statement is answered.
func (g *Gate) Hold(openedBefore bool, texts func() []string) time.Time {
	if g == nil || !g.armed.Load() || openedBefore {
		return time.Time{}
	}
	sqls := texts()
	g.mu.Lock()
	if g.req == nil || g.waiting >= MaxBuffered || !slices.ContainsFunc(sqls, g.writes) {
		g.mu.Unlock()
		return time.Time{}
	}
	g.waiting++
	g.stats.Buffered++
	if g.stats.FirstHeld.IsZero() {
		g.stats.FirstHeld = time.Now()
	}
	released, deadline := g.released, g.req.Deadline
	g.mu.Unlock()
	start := time.Now()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-released:
	case <-timer.C:
	}
	g.mu.Lock()
	g.waiting--
	g.stats.MaxHeld = max(g.stats.MaxHeld, time.Since(start))
	g.mu.Unlock()
	return start
}

// Answered records that a statement held since heldAt (what Hold
// returned; zero: not held, nothing recorded) was answered: its wait from
// the hold to its answer is the one its client felt. Once every statement
// held by a released request is answered, the gate's settled callback
// runs (the Follower reports the figures at once).
func (g *Gate) Answered(heldAt time.Time) {
	if g == nil || heldAt.IsZero() {
		return
	}
	now := time.Now()
	g.mu.Lock()
	if heldAt.Before(g.stats.ArmedAt) {
		g.mu.Unlock()
		return // held by an earlier request
	}
	if len(g.waits) < MaxBuffered {
		g.waits = append(g.waits, now.Sub(heldAt))
	}
	g.stats.Answered++
	if g.stats.FirstAnswered.IsZero() {
		g.stats.FirstAnswered = now
	}
	settled := g.settled
	if g.req != nil || g.stats.Answered < g.stats.Buffered {
		settled = nil
	}
	g.mu.Unlock()
	if settled != nil {
		settled()
	}
}

// OnArm sets a callback run (in a goroutine of its own) each time the
// gate arms for a request: the proxy warms its connections to the
// request's clusters.
func (g *Gate) OnArm(f func(*BufferRequest)) {
	g.mu.Lock()
	g.onArm = f
	g.mu.Unlock()
}

// OnSettled sets the callback Answered runs once every held statement of
// a released request is answered.
func (g *Gate) OnSettled(f func()) {
	g.mu.Lock()
	g.settled = f
	g.mu.Unlock()
}

// Armed says whether the gate holds statements now.
func (g *Gate) Armed() bool { return g != nil && g.armed.Load() }

// writes says whether sql names one of the request's tables and may
// write: anything but a plain SELECT (or VALUES, TABLE, SHOW) without a
// locking clause and without a data-modifying word.
func (g *Gate) writes(sql string) bool {
	return g.names(sql) && !readOnly(sql)
}

// readOnly says whether sql surely only reads: it starts with SELECT,
// VALUES, TABLE or SHOW (or WITH), and no word of it is one that writes or
// locks rows (INSERT, UPDATE, DELETE, MERGE, COPY, TRUNCATE, FOR UPDATE,
// FOR SHARE...) or calls a function that might (nextval, setval). It errs
// on the side of "may write".
func readOnly(sql string) bool {
	words := strings.FieldsFunc(strings.ToLower(sql), func(r rune) bool { return r >= 0x80 || !wordByte(byte(r)) })
	if len(words) == 0 || !slices.Contains([]string{"select", "values", "table", "show", "with"}, words[0]) {
		return false
	}
	for _, w := range words {
		switch w {
		case "insert", "update", "delete", "merge", "copy", "truncate", "share", "into", "nextval", "setval", "lock", "call", "do":
			return false
		}
	}
	return true
}

// names says whether sql names one of the request's tables: a
// case-insensitive match of the table's name as a word. It errs on the
// side of holding (a column or alias of that name holds the statement
// too), never the other way: a statement on a moving table always
// mentions its name.
func (g *Gate) names(sql string) bool {
	low := strings.ToLower(sql)
	for _, t := range g.words {
		for i := 0; ; {
			j := strings.Index(low[i:], t)
			if j < 0 {
				break
			}
			j += i
			if (j == 0 || !wordByte(low[j-1])) && (j+len(t) == len(low) || !wordByte(low[j+len(t)])) {
				return true
			}
			i = j + 1
		}
	}
	return false
}

func wordByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 0x80
}

// MessageSQL lists the statements' SQL of extended-protocol messages:
// Parse's query, and for Bind the text of its prepared statement
// (stmtSQL).
func MessageSQL(msgs []pgproto3.FrontendMessage, stmtSQL func(name string) string) []string {
	var out []string
	for _, m := range msgs {
		switch m := m.(type) {
		case *pgproto3.Parse:
			out = append(out, m.Query)
		case *pgproto3.Bind:
			out = append(out, stmtSQL(m.PreparedStatement))
		}
	}
	return out
}

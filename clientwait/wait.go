package clientwait

import (
	"errors"
	"net"
	"sync"
	"time"
)

// ErrParked is what a session's read returns when the session parks
// instead (Wait.End reported a park).
var ErrParked = errors.New("the session parks")

// past is the read deadline that cuts a wait short.
var past = time.Unix(1, 0)

// Wait is one session's wait for its client's next message, shared with
// the goroutines that may cut it short. The zero value is ready once
// SetConn has named the connection.
type Wait struct {
	mu   sync.Mutex
	conn net.Conn // whose read deadline interrupts the wait
	// waiting: the session waits for its client's next message; idle: at a
	// message boundary and outside a transaction; killed: it must end as
	// soon as its goroutine sees it.
	waiting, idle, killed bool
	// parkable: the wait may be cut short for the session to park; park:
	// the sweep did so; parked: the session is parked (Sweeper.Park) and
	// resume runs it again.
	parkable, park, parked bool
	resume                 func()
	parkedOn               *poller
	fd                     int // the socket it is parked on (epoll)
	// gen counts the waits; seen is the one the last sweep saw.
	gen, seen uint64
}

// SetConn names the connection whose read deadline cuts the wait short.
func (w *Wait) SetConn(c net.Conn) {
	w.mu.Lock()
	w.conn = c
	w.mu.Unlock()
}

// Begin is called before the session waits for its client: boundary says
// no extended-protocol batch is pending, inTx that a transaction is open,
// draining that the server drains, parkable that the session may park. It
// reports whether the session must end instead (killed, or draining and
// idle).
func (w *Wait) Begin(boundary, inTx, draining, parkable bool) (end bool) {
	w.mu.Lock()
	idle := boundary && !inTx
	end = w.killed || (draining && idle)
	w.waiting, w.idle = !end, !end && idle
	w.parkable, w.parked, w.parkedOn = !end && parkable, false, nil
	w.gen++
	w.mu.Unlock()
	return end
}

// End is called once the wait is over. killed: the session must end; park:
// the sweep cut the wait short so the session parks (its read deadline is
// cleared again).
func (w *Wait) End() (killed, park bool) {
	w.mu.Lock()
	killed, park = w.killed, w.park
	if park {
		w.park = false
		if !killed {
			_ = w.conn.SetReadDeadline(time.Time{})
		}
	}
	w.waiting, w.idle = false, false
	w.mu.Unlock()
	return killed, park
}

// takeResume returns the function that runs the parked session again,
// once: nil if it was taken already.
func (w *Wait) takeResume() func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.resume
	w.resume = nil
	return r
}

// Waiting reports whether the session waits for its client (parked
// included); false while it runs a statement.
func (w *Wait) Waiting() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiting
}

// Killed reports whether the session must end.
func (w *Wait) Killed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.killed
}

// Wake marks the session to end if it waits idle, or with force in any
// case, and cuts its wait short when it waits idle (or, with force, waits
// at all). It reports whether the wait was cut short.
func (w *Wait) Wake(force bool) bool {
	w.mu.Lock()
	wake := w.idle || (force && w.waiting)
	if wake || force {
		w.killed = true
	}
	if wake {
		_ = w.conn.SetReadDeadline(past)
	}
	p := w.parkedOn
	w.mu.Unlock()
	if wake && p != nil {
		p.unpark(w)
	}
	return wake
}

// sweep cuts short a parkable wait the previous sweep already saw.
func (w *Wait) sweep() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.waiting || !w.parkable || w.parked || w.park || w.killed {
		return
	}
	if w.seen == w.gen {
		w.park = true
		_ = w.conn.SetReadDeadline(past)
		return
	}
	w.seen = w.gen
}

// Sweeper cuts short, every period, the parkable waits it already saw at
// the previous sweep: a session parks after waiting between one and two
// periods. Its goroutine runs while it has waits. It also waits for the
// parked sessions' clients (Park).
type Sweeper struct {
	every  time.Duration
	mu     sync.Mutex
	waits  map[*Wait]struct{}
	stop   chan struct{} // nil while the goroutine is not running
	poller *poller
}

// NewSweeper sweeps every period (at least a millisecond).
func NewSweeper(every time.Duration) *Sweeper {
	return &Sweeper{every: max(every, time.Millisecond), waits: map[*Wait]struct{}{}, poller: newPoller()}
}

// Park parks a session whose wait the sweep cut short (Wait.End): resume
// runs it again, in a new goroutine, once c (Socket) has something to
// read, is at its end or failed, or Wake ends the session, or the sweeper
// closes. Until then the session has no goroutine and c is read by no one.
func (s *Sweeper) Park(w *Wait, c net.Conn, resume func()) {
	w.mu.Lock()
	w.parked, w.resume, w.parkedOn = true, resume, s.poller
	w.mu.Unlock()
	if !s.poller.park(w, c) {
		if r := w.takeResume(); r != nil {
			go r()
		}
	}
}

// Close resumes every parked session (each then finds its connection
// closed, or reads on) and parks no more: resume runs at once from then
// on.
func (s *Sweeper) Close() {
	s.poller.close()
	s.mu.Lock()
	list := make([]*Wait, 0, len(s.waits))
	for w := range s.waits {
		list = append(list, w)
	}
	s.mu.Unlock()
	for _, w := range list {
		s.poller.unpark(w)
	}
}

// Add sweeps w from now on.
func (s *Sweeper) Add(w *Wait) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits[w] = struct{}{}
	if s.stop == nil {
		s.stop = make(chan struct{})
		go s.run(s.stop)
	}
}

// Remove stops sweeping w; the goroutine ends with the last wait.
func (s *Sweeper) Remove(w *Wait) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waits, w)
	if len(s.waits) == 0 && s.stop != nil {
		close(s.stop)
		s.stop = nil
	}
}

func (s *Sweeper) run(stop chan struct{}) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	var list []*Wait
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		for w := range s.waits {
			list = append(list, w)
		}
		s.mu.Unlock()
		for _, w := range list {
			w.sweep()
		}
		clear(list)
		list = list[:0]
	}
}

//go:build !linux

package clientwait

import "net"

// poller is Linux's epoll set; elsewhere sessions do not park.
type poller struct{}

func newPoller() *poller { return &poller{} }

// Socket returns nil: on this system a session waits for its client in its
// own goroutine.
func Socket(c net.Conn) net.Conn { return nil }

func (p *poller) park(w *Wait, c net.Conn) bool { return false }

func (p *poller) unpark(w *Wait) {
	if r := w.takeResume(); r != nil {
		go r()
	}
}

func (p *poller) close() {}

// Gone reports whether the client of socket c went away; without a
// non-blocking peek here, it never says so.
func Gone(c net.Conn) bool { return false }

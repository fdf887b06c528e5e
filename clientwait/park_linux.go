package clientwait

import (
	"errors"
	"net"
	"sync"
	"syscall"
)

// poller waits for the parked sessions' sockets with an epoll set of its
// own (one-shot, level-triggered, next to the Go runtime's), served by one
// goroutine: a parked session costs no goroutine and no stack.
type poller struct {
	mu      sync.Mutex
	epfd    int // -1 until the first park, and once closed
	closed  bool
	waiting map[int]*Wait // by socket
}

func newPoller() *poller { return &poller{epfd: -1, waiting: map[int]*Wait{}} }

// Socket returns c if a session on it can park (a socket: not a TLS
// connection, whose buffered records are not visible on the socket), else
// nil.
func Socket(c net.Conn) net.Conn {
	if _, ok := c.(syscall.Conn); !ok {
		return nil
	}
	return c
}

// park adds c's socket to the set; false: c cannot be waited on (or has
// input already, or the poller is closed) and the session must run now.
func (p *poller) park(w *Wait, c net.Conn) bool {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return false
	}
	added := false
	// Control keeps the socket open while it runs.
	_ = rc.Control(func(fd uintptr) {
		if readable(fd) {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.closed || (p.epfd < 0 && !p.start()) {
			return
		}
		w.mu.Lock()
		w.fd = int(fd)
		w.mu.Unlock()
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd)}
		err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
		if errors.Is(err, syscall.EEXIST) { // left armed by a wake that came first
			err = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev)
		}
		if err == nil {
			p.waiting[int(fd)] = w
			added = true
		}
	})
	return added
}

// start creates the epoll set and its goroutine (under mu).
func (p *poller) start() bool {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	p.epfd = fd
	go p.run(fd)
	return true
}

func (p *poller) run(epfd int) {
	var events [128]syscall.EpollEvent
	for {
		n, err := syscall.EpollWait(epfd, events[:], 1000)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			syscall.Close(epfd)
			return
		}
		var ready []*Wait
		for _, ev := range events[:max(n, 0)] {
			if w := p.waiting[int(ev.Fd)]; w != nil {
				delete(p.waiting, int(ev.Fd))
				_ = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_DEL, int(ev.Fd), nil)
				ready = append(ready, w)
			}
		}
		p.mu.Unlock()
		for _, w := range ready {
			if r := w.takeResume(); r != nil {
				go r()
			}
		}
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// unpark takes w out of the set and runs its session now, unless it ran
// already.
func (p *poller) unpark(w *Wait) {
	w.mu.Lock()
	fd := w.fd
	w.mu.Unlock()
	p.mu.Lock()
	if p.waiting[fd] == w {
		delete(p.waiting, fd)
		_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
	}
	p.mu.Unlock()
	if r := w.takeResume(); r != nil {
		go r()
	}
}

// close parks no more; the goroutine ends within a second.
func (p *poller) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// readable peeks at the socket: false while reading would block.
func readable(fd uintptr) bool {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
	return !errors.Is(err, syscall.EAGAIN)
}

// Gone reports whether the client of socket c (a TCP connection) went
// away: reading it would return end of file or an error. Bytes the client
// sent and the session has not read yet say it is there. It peeks without
// taking the socket's read lock, so a session blocked reading c does not
// delay it.
func Gone(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = err == nil && n == 0 || err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR)
	})
	return gone
}

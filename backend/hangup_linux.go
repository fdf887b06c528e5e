package backend

import (
	"errors"
	"sync"
	"syscall"
)

// hangups watches the sockets of the process's backend connections for
// their server's hang-up, so that lending an idle connection costs no
// system call: one epoll set (next to the Go runtime's), edge-triggered
// and asking for EPOLLRDHUP alone — the server closed its side, as a
// backend that exits does, whether terminated, crashed or shut down — so
// a reply arriving on a connection wakes nothing. Its goroutine marks the
// connection (Conn.hungUp), and takes it out of the set.
//
// An event carries the socket and the connection's registration number:
// an event read for a socket whose connection closed meanwhile (and whose
// number a new connection got) matches no registration and is dropped.
var hangups = struct {
	mu    sync.Mutex
	epfd  int // 0: not started; -1: epoll is not available
	next  int32
	conns map[int32]hangupEntry // by socket
}{conns: map[int32]hangupEntry{}}

// epollET is EPOLLET as the event mask's type (the constant is negative
// in package syscall).
const epollET = 1 << 31

type hangupEntry struct {
	id int32
	b  *Conn
}

// watchHangup adds b's socket to the set; false: it cannot be watched
// (no socket, no epoll), and its lends peek at the socket instead.
func watchHangup(b *Conn) bool {
	raw, ok := rawSocketOf(b.netConn)
	if !ok {
		return false
	}
	added := false
	// Control keeps the socket open while it runs.
	_ = raw.Control(func(fd uintptr) {
		hangups.mu.Lock()
		defer hangups.mu.Unlock()
		if hangups.epfd == 0 {
			startHangups()
		}
		if hangups.epfd < 0 {
			return
		}
		hangups.next++
		id := hangups.next
		ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | epollET, Fd: int32(fd), Pad: id}
		if syscall.EpollCtl(hangups.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev) != nil {
			return
		}
		hangups.conns[int32(fd)] = hangupEntry{id: id, b: b}
		b.hangupFD, b.hangupID = int32(fd), id
		added = true
	})
	return added
}

// unwatchHangup forgets b before its socket is closed (the kernel takes a
// closed socket out of the set itself).
func unwatchHangup(b *Conn) {
	if !b.watched {
		return
	}
	hangups.mu.Lock()
	if e, ok := hangups.conns[b.hangupFD]; ok && e.id == b.hangupID {
		delete(hangups.conns, b.hangupFD)
	}
	hangups.mu.Unlock()
}

// startHangups creates the set and its goroutine (under hangups.mu).
func startHangups() {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		hangups.epfd = -1
		return
	}
	hangups.epfd = fd
	go runHangups(fd)
}

func runHangups(epfd int) {
	var events [64]syscall.EpollEvent
	for {
		n, err := syscall.EpollWait(epfd, events[:], -1)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return // cannot happen with a valid set; lends still see EOFs
		}
		hangups.mu.Lock()
		for _, ev := range events[:max(n, 0)] {
			e, ok := hangups.conns[ev.Fd]
			if !ok || e.id != ev.Pad {
				continue
			}
			e.b.hungUp.Store(true)
			delete(hangups.conns, ev.Fd)
			// Still open: its connection's close waits for hangups.mu.
			_ = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_DEL, int(ev.Fd), nil)
		}
		hangups.mu.Unlock()
	}
}

package backend

import (
	"crypto/tls"
	"net"
	"syscall"
)

// socketOf is the socket under a backend connection, TLS or not, for the
// non-blocking peeks of alive, Pending and waitReadable. Under TLS a peek
// sees record bytes, not messages: whether anything (or an EOF) is there
// is all it is asked.
func socketOf(nc net.Conn) (syscall.Conn, bool) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	return sc, ok
}

// rawSocketOf is the socket under nc (see socketOf) for system calls of
// the proxy's own on it; false if there is none.
func rawSocketOf(nc net.Conn) (syscall.RawConn, bool) {
	sc, ok := socketOf(nc)
	if !ok {
		return nil, false
	}
	raw, err := sc.SyscallConn()
	return raw, err == nil
}

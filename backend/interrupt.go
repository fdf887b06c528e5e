package backend

// Interrupt closes the sockets of the pool's connections lent to client
// (a session's process ID; 0: every lent connection) and returns how
// many. It is how a session that must end is stopped whatever it is
// blocked on: a read of a backend that answers nothing (idle in
// transaction), a write to a backend that does not read, a merge's
// readers. Their owner's next (or pending) read or write fails, marks the
// connection broken, and its Release closes it; Postgres sees the socket
// go and rolls the backend's transaction back. A CancelRequest cannot do
// this: Postgres ignores it between commands and while a backend waits to
// send its rows. Idle connections are not touched. Safe from any
// goroutine.
func (p *Pool) Interrupt(client uint32) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for b := range p.all {
		if b.pooled.Load() || client != 0 && b.client.Load() != client || b.netConn == nil {
			continue
		}
		_ = b.netConn.Close()
		n++
	}
	return n
}

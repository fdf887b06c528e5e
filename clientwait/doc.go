// Package clientwait is a client session's wait for its next message, and
// what may cut that wait short: a drain or a terminate (the session must
// end), and parking.
//
// A session that waits longer than a moment for its client parks: it gives
// its buffers back and its goroutine (with the stack a statement grew)
// ends; the Sweeper's epoll set (one per server, served by one goroutine)
// watches the client's socket, next to the Go runtime's, and the first
// byte the client sends (or its going away, a Wake, Sweeper.Close) runs
// the session again in a new goroutine. An idle client so costs its socket
// and its session's state. The Sweeper also finds the waits to cut short:
// every period it marks each parkable wait it already saw at the previous
// sweep and moves its read deadline to the past; the session sees the
// timeout (Wait.End) and parks (Sweeper.Park).
//
// It owns Wait (the waiting, idle, killed and park flags under one lock,
// with the connection whose read deadline interrupts the wait, and the
// function that resumes a parked session, run once), Sweeper and its
// poller (epoll on Linux; elsewhere Socket is nil and sessions do not
// park). A TLS session does not park: the records its connection buffered
// are not visible on the socket.
//
// Wait.Waiting and Gone let the proxy find sessions whose client went
// away while they run a statement (they do not read the client then): a
// peek at the socket that never consumes, nor takes its read lock.
//
// It imports nothing of shardgate; package proxy uses it.
package clientwait

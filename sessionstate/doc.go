// Package sessionstate keeps the state a client session has on its
// backend connections, without the session itself: which connection holds
// each cursor (Cursors) and which notification channels the session
// listens on (Channels). The proxy decides from it where FETCH, MOVE and
// CLOSE run and whether the session must keep its connections.
//
// It may import backend, planner and sqlerr; it must never import proxy.
package sessionstate

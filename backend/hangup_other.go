//go:build !linux

package backend

// watchHangup: without epoll no connection is watched; its lends peek at
// the socket (Conn.alive).
func watchHangup(*Conn) bool { return false }

func unwatchHangup(*Conn) {}

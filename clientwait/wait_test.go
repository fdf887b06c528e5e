package clientwait

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// pair returns the two ends of a loopback TCP connection.
func pair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// readCut reads from c and reports whether the read was cut short by a
// deadline.
func readCut(c net.Conn) bool {
	var b [1]byte
	_, err := c.Read(b[:])
	return errors.Is(err, os.ErrDeadlineExceeded)
}

func TestSweepCutsLongWaitsShort(t *testing.T) {
	server, _ := pair(t)
	var w Wait
	w.SetConn(server)
	s := NewSweeper(10 * time.Millisecond)
	s.Add(&w)
	defer s.Remove(&w)

	start := time.Now()
	if w.Begin(true, false, false, true) {
		t.Fatal("Begin: end")
	}
	if !readCut(server) {
		t.Fatal("the read was not cut short")
	}
	if took := time.Since(start); took < 10*time.Millisecond || took > 2*time.Second {
		t.Fatalf("cut after %s, want one to two periods", took)
	}
	if killed, park := w.End(); killed || !park {
		t.Fatalf("End: killed %v park %v, want a park", killed, park)
	}
	// The deadline is cleared again, and a wait that may not park is
	// left alone.
	w.Begin(true, false, false, false)
	_ = server.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	start = time.Now()
	readCut(server)
	if took := time.Since(start); took < 90*time.Millisecond {
		t.Fatalf("a wait that may not park was cut after %s", took)
	}
	if _, park := w.End(); park {
		t.Fatal("park for a wait that may not park")
	}
}

func TestWake(t *testing.T) {
	server, _ := pair(t)
	var w Wait
	w.SetConn(server)
	// In a transaction: only force wakes it, and then ends it.
	w.Begin(true, true, false, false)
	if w.Wake(false) || w.Killed() {
		t.Fatal("a drain woke a session in a transaction")
	}
	if !w.Wake(true) || !w.Killed() || !readCut(server) {
		t.Fatal("force did not wake and kill the waiting session")
	}
	if killed, _ := w.End(); !killed {
		t.Fatal("End: not killed")
	}
	if !w.Begin(true, false, false, true) {
		t.Fatal("Begin of a killed session: not end")
	}
	var d Wait
	d.SetConn(server)
	if !d.Begin(true, false, true, true) {
		t.Fatal("Begin while draining, idle: not end")
	}
	if d.Begin(false, false, true, true) {
		t.Fatal("Begin while draining, mid-batch: end")
	}
}

func TestParkResumes(t *testing.T) {
	if Socket(&net.TCPConn{}) == nil {
		t.Skip("no parking on this system")
	}
	server, client := pair(t)
	var w Wait
	w.SetConn(server)
	s := NewSweeper(time.Hour)
	s.Add(&w)
	defer s.Close()
	resumed := make(chan struct{}, 4)
	park := func() {
		w.Begin(true, false, false, true)
		s.Park(&w, server, func() { resumed <- struct{}{} })
	}

	park()
	select {
	case <-resumed:
		t.Fatal("resumed without input")
	case <-time.After(50 * time.Millisecond):
	}
	_, _ = client.Write([]byte("x"))
	select {
	case <-resumed:
	case <-time.After(5 * time.Second):
		t.Fatal("not resumed on input")
	}
	var b [1]byte
	_, _ = server.Read(b[:])

	// Wake resumes a parked idle session, once.
	park()
	if !w.Wake(false) {
		t.Fatal("Wake: not woken")
	}
	<-resumed
	w.End()

	// Input already there: resumed at once.
	w = Wait{}
	w.SetConn(server)
	_, _ = client.Write([]byte("y"))
	time.Sleep(10 * time.Millisecond)
	park()
	select {
	case <-resumed:
	case <-time.After(5 * time.Second):
		t.Fatal("not resumed with input waiting")
	}
	_, _ = server.Read(b[:])

	// The client going away, and Close, resume too.
	park()
	client.Close()
	select {
	case <-resumed:
	case <-time.After(5 * time.Second):
		t.Fatal("not resumed at the client's end")
	}
	server2, _ := pair(t)
	var w2 Wait
	w2.SetConn(server2)
	s.Add(&w2)
	w2.Begin(true, false, false, true)
	s.Park(&w2, server2, func() { resumed <- struct{}{} })
	s.Close()
	select {
	case <-resumed:
	case <-time.After(5 * time.Second):
		t.Fatal("not resumed by Close")
	}
	if len(resumed) > 0 {
		t.Fatal("a session resumed twice")
	}
}

package testenv

import (
	"testing"
	"time"
)

func TestParseLaneLine(t *testing.T) {
	tx, ok := parseLaneLine("0 3 1500 0 1796236874 201939")
	if !ok || tx.N != 3 || !tx.End.Equal(time.Unix(1796236874, 201939000)) || tx.End.Sub(tx.Start) != 1500*time.Microsecond {
		t.Fatalf("parsed %+v, %v", tx, ok)
	}
	for _, line := range []string{"0 4 failed 0 1796236874 201939", "0 5 skipped 0 1796236874 201939", "0 1 2"} {
		if _, ok := parseLaneLine(line); ok {
			t.Errorf("%q read as an acknowledged transaction", line)
		}
	}
}

func TestLaneErrorBeganBefore(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		e    LaneError
		want bool
	}{
		{LaneError{Started: t0.Add(-time.Second), LastAck: t0.Add(-time.Millisecond)}, true},
		{LaneError{Started: t0.Add(-time.Second), LastAck: t0.Add(time.Millisecond)}, false},
		{LaneError{Started: t0.Add(-time.Second), Message: "ERROR: lost connection"}, true},
		{LaneError{Started: t0.Add(-time.Second), Message: "pgbench: error: connection to server at 127.0.0.1 failed"}, false},
		{LaneError{Started: t0.Add(time.Second)}, false},
	}
	for i, c := range cases {
		if got := c.e.BeganBefore(t0); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}

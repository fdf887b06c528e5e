package twopc

import "testing"

type partedConn struct {
	Participant
	cluster string
}

func (p partedConn) Cluster() string { return p.cluster }
func (partedConn) Part() string      { return "gsi" }

// TestPartedGID: a second participant on a cluster is prepared under a
// name of its own, whose decision is the transaction's.
func TestPartedGID(t *testing.T) {
	name := preparedName("shardgate_a_1", partedConn{cluster: "pg1"})
	if name != "shardgate_a_1#gsi@pg1" {
		t.Fatalf("prepared as %q", name)
	}
	for prepared, want := range map[string]string{name: "shardgate_a_1", "shardgate_a_1@pg1": "shardgate_a_1", "other": "other"} {
		if got := DecisionGID(prepared, "pg1"); got != want {
			t.Errorf("DecisionGID(%q) = %q, want %q", prepared, got, want)
		}
	}
}

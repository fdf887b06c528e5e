package pgwire

import "testing"

func TestTagSum(t *testing.T) {
	var s TagSum
	if s.Any {
		t.Fatal("Any before Add")
	}
	s.Add([]byte("UPDATE 3\x00"))
	s.Add([]byte("UPDATE 4\x00"))
	if got := s.Tag(); got != "UPDATE 7" || !s.Any {
		t.Errorf("Tag() = %q, want UPDATE 7", got)
	}
	var v TagSum
	v.Add([]byte("CREATE TABLE\x00"))
	if got := v.Tag(); got != "CREATE TABLE" {
		t.Errorf("Tag() = %q, want CREATE TABLE", got)
	}
}

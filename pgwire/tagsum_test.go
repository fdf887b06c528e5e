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

// TestTagRows: the row count of a command tag, in a body or a run of
// messages, as SHOW QUERIES' rows sums them.
func TestTagRows(t *testing.T) {
	for tag, want := range map[string]int64{"SELECT 5\x00": 5, "INSERT 0 12": 12, "UPDATE 0\x00": 0, "BEGIN\x00": 0,
		"COPY 123456": 123456, "FETCH x": 0, "5": 0, "": 0, "DELETE 99999999999999999999": 0} {
		if got := TagRows([]byte(tag)); got != want {
			t.Errorf("TagRows(%q) = %d, want %d", tag, got, want)
		}
	}
	var run []byte
	for _, m := range []struct {
		typ  byte
		body string
	}{{'D', "\x00\x01\x00\x00\x00\x01x"}, {'C', "SELECT 3\x00"}, {'N', "x\x00"}, {'C', "UPDATE 4\x00"}} {
		run = append(run, m.typ, 0, 0, 0, byte(len(m.body)+4))
		run = append(run, m.body...)
	}
	if got := RunTagRows(run); got != 7 {
		t.Errorf("RunTagRows = %d, want 7", got)
	}
}

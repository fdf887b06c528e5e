package backend

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/shardgate/shardgate/pgwire"
)

// TestReadRunMatchesRead reads one real answer (rows, a notice among
// them, rows larger than the read buffer, the tag) twice: with Read alone,
// and with ReadRun of rows and notices first and Read for the rest. The
// bytes, put back in wire form, are the same, and most of the rows came
// in runs.
func TestReadRunMatchesRead(t *testing.T) {
	_, b := poolOfOne(t)
	defer b.Release()
	if err := b.SimpleExec(`CREATE OR REPLACE FUNCTION pg_temp.noisy(i int) RETURNS int AS $$
BEGIN IF i = 500 THEN RAISE NOTICE 'half way'; END IF; RETURN i; END $$ LANGUAGE plpgsql`, nil); err != nil {
		t.Fatal(err)
	}
	const q = "SELECT pg_temp.noisy(g), repeat('x', CASE WHEN g % 400 = 0 THEN 50000 ELSE g % 90 END) FROM generate_series(1, 2000) g"
	read := func(pass pgwire.TypeSet) (wire []byte, runs, runRows int) {
		if err := b.SendQuery(q); err != nil {
			t.Fatal(err)
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		for {
			if run := b.ReadRun(pass); len(run) > 0 {
				runs++
				for i := 0; i < len(run); i += 1 + int(binary.BigEndian.Uint32(run[i+1:])) {
					runRows++
				}
				wire = append(wire, run...)
				continue
			}
			m, err := b.Read()
			if err != nil {
				t.Fatal(err)
			}
			wire = append(wire, m.Type)
			wire = binary.BigEndian.AppendUint32(wire, uint32(len(m.Body)+4))
			wire = append(wire, m.Body...)
			if m.Type == 'Z' {
				return wire, runs, runRows
			}
		}
	}
	want, runs, _ := read(0)
	if runs != 0 {
		t.Fatalf("%d runs with an empty set", runs)
	}
	got, runs, runRows := read(pgwire.Types("DN"))
	if !bytes.Equal(got, want) {
		t.Fatalf("answer read in runs differs: %d bytes, want %d", len(got), len(want))
	}
	if !bytes.Contains(want, []byte("half way")) {
		t.Fatal("no notice among the rows")
	}
	if runs == 0 || runRows < 1000 || runs >= runRows {
		t.Fatalf("%d runs of %d messages: want most of the 2000 rows in runs of several", runs, runRows)
	}
	t.Logf("%d of 2001 rows and notices in %d runs", runRows, runs)
}

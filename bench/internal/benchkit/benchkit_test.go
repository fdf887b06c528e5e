package benchkit

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestReplaceSection(t *testing.T) {
	doc := "# Benchmarks\n\nintro\n\n## pgbench -S (issue 3)\n\nold table\n\n## other\n\nkeep\n"
	got := ReplaceSection(doc, "## pgbench -S (issue 3)\n\nnew table\n")
	want := "# Benchmarks\n\nintro\n\n## pgbench -S (issue 3)\n\nnew table\n\n## other\n\nkeep\n"
	if got != want {
		t.Fatalf("replace:\n%s\nwant:\n%s", got, want)
	}
	got = ReplaceSection("# Benchmarks\n\nintro\n", "## new\n\nx\n")
	if want := "# Benchmarks\n\nintro\n\n## new\n\nx\n"; got != want {
		t.Fatalf("append:\n%q\nwant:\n%q", got, want)
	}
	last := "# B\n\n## s\n\nold\n"
	if got := ReplaceSection(last, "## s\n\nnew\n"); got != "# B\n\n## s\n\nnew\n" {
		t.Fatalf("last section: %q", got)
	}
	// A second section appended after the first keeps the first intact.
	two := ReplaceSection("# Benchmarks\n\nintro\n\n## new\n\nx\n", "## Across shards (issue 4)\n\ny\n")
	if two != "# Benchmarks\n\nintro\n\n## new\n\nx\n\n## Across shards (issue 4)\n\ny\n" {
		t.Fatalf("second section: %q", two)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestSplitList(t *testing.T) {
	got := SplitList(" a, ,b,")
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("got %q", got)
	}
}

func TestParseCPU(t *testing.T) {
	// A real /proc/<pid>/stat line (utime 1234, stime 56 ticks) whose
	// command name holds spaces and a ')'.
	stat := "19353 (sg (a) b) S 19350 19350 14967 0 -1 4194304 102 0 0 0 1234 56 0 0 20 0 9 0 573741 3133440 412 " +
		"18446744073709551615 94035303571456 94035303591337 140726828937936 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
	got, err := ParseCPU([]byte(stat))
	if err != nil || got != 12900*time.Millisecond {
		t.Fatalf("ParseCPU = %v, %v; want 12.9s", got, err)
	}
	st, err := ParseStat([]byte(stat))
	if err != nil || st.PPID != 19350 || st.CPU != 12900*time.Millisecond || st.Children != 0 {
		t.Fatalf("ParseStat = %+v, %v", st, err)
	}
	withChildren := strings.Replace(stat, " 1234 56 0 0 ", " 1234 56 7 3 ", 1)
	if st, err := ParseStat([]byte(withChildren)); err != nil || st.Children != 100*time.Millisecond {
		t.Fatalf("ParseStat(children 7+3 ticks) = %+v, %v", st, err)
	}
	for _, bad := range []string{"", "19353 cat R 1 2", "19353 (cat) R 1 2 3", "19353 (cat) R 19350 19350 14967 0 -1 4194304 102 0 0 0 x 56 0"} {
		if d, err := ParseCPU([]byte(bad)); err == nil {
			t.Errorf("ParseCPU(%q) = %v, want an error", bad, d)
		}
	}
	self, err := ReadCPU(os.Getpid())
	if err != nil || self < 0 {
		t.Fatalf("ReadCPU(self) = %v, %v", self, err)
	}
	// This process's tree: a child that burns CPU and ends is counted
	// once waited for.
	before, err := ReadTreeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done").Run(); err != nil {
		t.Fatal(err)
	}
	after, err := ReadTreeCPU(os.Getpid())
	if err != nil || after-before < 50*time.Millisecond {
		t.Fatalf("ReadTreeCPU grew by %v (%v) over a child's busy loop, want its CPU time", after-before, err)
	}
}

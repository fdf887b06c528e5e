package benchkit

import "testing"

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

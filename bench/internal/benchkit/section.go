package benchkit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Median returns the median of xs (the mean of the middle two for an even
// count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Cell makes s safe inside a Markdown table cell.
func Cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	return s
}

// WriteSection puts section (which starts with its "## " heading line) into
// the Markdown file at path: in place of an existing section with the same
// heading (up to the next "## " heading), else at the end. Other sections
// are kept as they are.
func WriteSection(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(old)
	if doc == "" {
		doc = "# Benchmarks\n\nFigures written by `bench/run.sh -write-doc` (see `bench/README.md`). " +
			"Each section is replaced by the next run of its scenario.\n"
	}
	return os.WriteFile(path, []byte(ReplaceSection(doc, section)), 0o644)
}

// ReplaceSection returns doc with section in place of the section of the
// same heading, or appended.
func ReplaceSection(doc, section string) string {
	heading, _, _ := strings.Cut(section, "\n")
	section = strings.TrimRight(section, "\n") + "\n"
	lines := strings.SplitAfter(doc, "\n")
	start, end := -1, len(lines)
	for i, l := range lines {
		t := strings.TrimRight(l, "\r\n")
		if start < 0 && t == heading {
			start = i
			continue
		}
		if start >= 0 && strings.HasPrefix(t, "## ") {
			end = i
			break
		}
	}
	if start < 0 {
		return strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	before := strings.Join(lines[:start], "")
	after := strings.Join(lines[end:], "")
	if after != "" {
		section += "\n"
	}
	return before + section + after
}

// DocPaths fills in the defaults of a harness's -repo flag (found from the
// working directory) and -doc flag (REPO/docs/benchmarks.md).
func DocPaths(repo, doc *string) error {
	if *repo == "" {
		r, err := FindRepo()
		if err != nil {
			return err
		}
		*repo = r
	}
	if *doc == "" {
		*doc = filepath.Join(*repo, "docs", "benchmarks.md")
	}
	return nil
}

// Publish prints a harness's Markdown report and, with write, puts it into
// the document at path (WriteSection).
func Publish(md string, write bool, path string, logf func(format string, args ...any)) error {
	fmt.Print("\n" + md)
	if !write {
		return nil
	}
	if err := WriteSection(path, md); err != nil {
		return err
	}
	logf("wrote %s", path)
	return nil
}

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#+ (.*)$`)
	notSlug   = regexp.MustCompile(`[^a-z0-9 _-]`)
)

// TestDocsStayInRepository checks the user documentation: every Markdown
// link in README.md, docs/ and the examples' READMEs points to a file of
// the repository (and, with #anchor, to one of its headings), and no Go or
// Markdown file refers to a design document outside the repository.
func TestDocsStayInRepository(t *testing.T) {
	root := "../.."
	var pages []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		if strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".md") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, bad := range []string{"DESIGN" + ".md", "../" + "shared"} {
				if strings.Contains(string(b), bad) {
					t.Errorf("%s refers to %s, outside the repository", path, bad)
				}
			}
		}
		if strings.HasSuffix(name, ".md") {
			pages = append(pages, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, page := range pages {
		rel, _ := filepath.Rel(root, page)
		if !(rel == "README.md" || strings.HasPrefix(rel, "docs/") || strings.HasPrefix(rel, "examples/")) {
			continue
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			link := m[1]
			checked++
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				t.Errorf("%s: link %s leaves the repository", rel, link)
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := page
			if path != "" {
				target = filepath.Join(filepath.Dir(page), path)
			}
			tb, err := os.ReadFile(target)
			if err != nil {
				if info, serr := os.Stat(target); serr == nil && info.IsDir() && anchor == "" {
					continue
				}
				t.Errorf("%s: link %s: %v", rel, link, err)
				continue
			}
			if anchor != "" && !hasHeading(string(tb), anchor) {
				t.Errorf("%s: link %s: no heading #%s in %s", rel, link, anchor, path)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d links checked; is the documentation there?", checked)
	}
}

// hasHeading reports whether a Markdown text has a heading whose anchor,
// as GitHub makes it, is anchor.
func hasHeading(text, anchor string) bool {
	for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
		h := strings.ToLower(strings.TrimSpace(m[1]))
		h = strings.ReplaceAll(notSlug.ReplaceAllString(h, ""), " ", "-")
		if h == anchor {
			return true
		}
	}
	return false
}

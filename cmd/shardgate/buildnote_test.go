package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildNote checks scripts/build-note.sh, which make runs before
// building: with the SQL parser not in the build cache (an empty GOCACHE)
// it warns that the first build takes minutes; with it cached, and
// when go reports it up to date, it says nothing.
func TestBuildNote(t *testing.T) {
	script, err := filepath.Abs("../../scripts/build-note.sh")
	if err != nil {
		t.Fatal(err)
	}
	run := func(env ...string) string {
		t.Helper()
		cmd := exec.Command("bash", script)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("build-note.sh: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run("GOCACHE=" + t.TempDir()); !strings.Contains(out, "about 7 minutes on 2 cores") {
		t.Errorf("empty build cache: no note about the first build's time: %q", out)
	}
	// A go that reports the parser up to date.
	fake := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out := run("GO=" + fake); out != "" {
		t.Errorf("parser cached: want no output, got %q", out)
	}
}

package benchkit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// FindRepo walks up from the working directory to shardgate's go.mod.
func FindRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/shardgate/shardgate\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the shardgate repository: run from it or pass -repo")
		}
		dir = parent
	}
}

// Machine describes the host: CPUs, memory, kernel.
func Machine() string {
	s := fmt.Sprintf("%d CPUs", runtime.NumCPU())
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				s += " (" + strings.TrimSpace(v) + ")"
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			var kb int64
			if _, err := fmt.Sscanf(l, "MemTotal: %d kB", &kb); err == nil {
				s += fmt.Sprintf(", %.1f GiB RAM", float64(kb)/(1<<20))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		s += ", Linux " + strings.TrimSpace(string(b))
	}
	return s
}

// LoadAvg returns the 1-minute load average.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

// GitDescribe returns repo's short commit, and says so if tracked files
// have uncommitted changes (the binary was built from them).
func GitDescribe(repo string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "(unknown commit)"
	}
	s := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		s += " with uncommitted changes"
	}
	return s
}

// PrefixWriter sends progress lines (testenv's) to stderr, each write
// prefixed with Prefix.
type PrefixWriter struct{ Prefix string }

func (w PrefixWriter) Write(p []byte) (int, error) {
	os.Stderr.Write([]byte(w.Prefix))
	return os.Stderr.Write(p)
}

// SplitList splits a comma-separated flag value, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

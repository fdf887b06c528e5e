package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kill9 kills the cluster's postmaster with SIGKILL, as a crash of its
// host does (kill -9: no shutdown, its backends orphaned), and waits
// until every process of the data directory has exited (they notice the
// postmaster's death), so Start can start it again.
func (c *Cluster) Kill9() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := os.ReadFile(filepath.Join(c.DataDir, "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("testenv: %s is not running: %w", c.Name, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return fmt.Errorf("testenv: bad postmaster.pid of %s", c.Name)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("testenv: kill -9 %d (%s): %w", pid, c.Name, err)
	}
	c.running = false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !c.anyProcess() {
			return nil
		}
	}
	return fmt.Errorf("testenv: processes of %s still run 30s after kill -9 of its postmaster", c.Name)
}

// anyProcess reports whether a process runs in the cluster's data
// directory (the postmaster and its children work there).
func (c *Cluster) anyProcess() bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == c.DataDir {
			return true
		}
	}
	return false
}

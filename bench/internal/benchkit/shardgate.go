package benchkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// BuildShardgate builds repo's ./cmd/shardgate into dir and returns the
// binary's path.
func BuildShardgate(ctx context.Context, repo, dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(repo, "cmd", "shardgate")); err != nil {
		return "", fmt.Errorf("./cmd/shardgate does not exist yet: the proxy binary is not in this tree")
	}
	bin := filepath.Join(dir, "shardgate")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/shardgate")
	cmd.Dir = repo
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/shardgate failed (%v): %s", err, LastLines(strings.TrimSpace(string(out)), 8))
	}
	return bin, nil
}

// Shardgate says how to start one `shardgate serve`.
type Shardgate struct {
	Name     string   // for logs and errors
	Bin      string   // the shardgate binary
	Topology string   // the topology file
	Port     int      // it listens on 127.0.0.1:Port
	LogPath  string   // its stdout and stderr
	Args     []string // more flags for serve
}

// StartShardgate validates the topology with `shardgate topology validate`,
// starts `shardgate serve --topology FILE --listen 127.0.0.1:PORT` and waits
// (up to 30 s) until it accepts connections. The process is stopped again if
// it does not come up; otherwise the caller stops it (Proc.Stop).
func StartShardgate(ctx context.Context, s Shardgate) (*Proc, error) {
	if out, err := RunCmd(ctx, 30*time.Second, "", nil, s.Bin, "topology", "validate", s.Topology); err != nil {
		return nil, fmt.Errorf("shardgate topology validate %s: %v: %s", filepath.Base(s.Topology), err, LastLines(strings.TrimSpace(out), 8))
	}
	listen := "127.0.0.1:" + strconv.Itoa(s.Port)
	args := append([]string{"serve", "--topology", s.Topology, "--listen", listen}, s.Args...)
	p, err := StartProc(s.Name, s.LogPath, nil, s.Bin, args...)
	if err != nil {
		return nil, err
	}
	if err := WaitPort(ctx, s.Port, p, 30*time.Second); err != nil {
		p.Stop(10 * time.Second)
		return nil, err
	}
	return p, nil
}

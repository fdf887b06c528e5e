package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RequirePassword makes the cluster ask the given roles for a SCRAM-SHA-256
// password over TCP (a pg_hba.conf line for each, ahead of the trust
// lines) and reloads its configuration. Other roles keep trust, so tests
// sharing the cluster are not affected. The roles need not exist yet.
func (c *Cluster) RequirePassword(ctx context.Context, roles ...string) error {
	path := filepath.Join(c.DataDir, "pg_hba.conf")
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("testenv: %s: %w", c.Name, err)
	}
	var lines strings.Builder
	for _, r := range roles {
		line := fmt.Sprintf("host all %s 127.0.0.1/32 scram-sha-256\n", r)
		if !strings.Contains(string(old), line) {
			lines.WriteString(line)
		}
	}
	if lines.Len() == 0 {
		return nil
	}
	if err := os.WriteFile(path, append([]byte(lines.String()), old...), 0o600); err != nil {
		return fmt.Errorf("testenv: %s: %w", c.Name, err)
	}
	if err := c.Exec(ctx, "", "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	// The postmaster rereads the file in the background.
	time.Sleep(300 * time.Millisecond)
	return nil
}

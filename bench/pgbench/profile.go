package main

// -profile DIR: CPU and allocation profiles of each shardgate target
// while pgbench runs against it, one CPU profile per query mode, and their
// merge, which is what cmd/shardgate/default.pgo is made from (see
// docs/benchmarks.md, "Profile-guided optimization").

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func (h *harness) profile(ctx context.Context) error {
	dir, err := filepath.Abs(h.cfg.profile)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	clients := h.cfg.clients[0]
	var cpus []string
	for _, name := range []string{tOne, tTwo} {
		t := h.targets[name]
		if t == nil || t.err != nil {
			continue
		}
		if t.debug == 0 {
			return fmt.Errorf("-profile %s: %w", name, errNoDebug)
		}
		for _, mode := range h.cfg.modes {
			secs := h.cfg.seconds
			h.logf("profile %s, %s: pgbench for %d s, CPU profile of the middle %d s", name, mode, secs+2, secs)
			done := make(chan error, 1)
			go func() {
				_, err := h.pgbenchRun(ctx, t, mode, clients, secs+2, "profile")
				done <- err
			}()
			time.Sleep(time.Second)
			path := filepath.Join(dir, fmt.Sprintf("cpu-%s-%s.pprof", name, mode))
			ferr := fetch(ctx, fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", t.debug, secs), path, time.Duration(secs+30)*time.Second)
			if err := <-done; err != nil {
				return fmt.Errorf("profile %s, %s: pgbench: %w", name, mode, err)
			}
			if ferr != nil {
				return fmt.Errorf("profile %s, %s: %w", name, mode, ferr)
			}
			cpus = append(cpus, path)
		}
		// Allocations since the proxy started: every measured run and the
		// profiling runs above.
		if err := fetch(ctx, fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/allocs", t.debug), filepath.Join(dir, "allocs-"+name+".pprof"), time.Minute); err != nil {
			return err
		}
	}
	if len(cpus) == 0 {
		return fmt.Errorf("-profile: no shardgate target to profile")
	}
	pgo := filepath.Join(dir, "default.pgo")
	if out, err := goTool(ctx, append([]string{"tool", "pprof", "-proto"}, cpus...)...); err != nil {
		return fmt.Errorf("merge the CPU profiles: %v: %s", err, out)
	} else if err := os.WriteFile(pgo, []byte(out), 0o644); err != nil {
		return err
	}
	top, err := goTool(ctx, "tool", "pprof", "-top", "-nodecount=30", pgo)
	if err != nil {
		return fmt.Errorf("go tool pprof -top: %v: %s", err, top)
	}
	_ = os.WriteFile(filepath.Join(dir, "top.txt"), []byte(top), 0o644)
	h.logf("profiles in %s; the merged CPU profile is %s (copy it to cmd/shardgate/default.pgo to refresh PGO); its top:\n%s", dir, pgo, top)
	return nil
}

// fetch saves the body of a GET of url to path.
func fetch(ctx context.Context, url, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// goTool runs the go command (pprof) and returns its standard output.
func goTool(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return stderr.String(), err
	}
	return string(out), nil
}

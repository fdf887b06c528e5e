package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// watchdog is a tiny shell process that outlives this one. It blocks reading
// a pipe whose only writer is this process; when this process dies for any
// reason (a panicking test, a `go test -timeout` dump, SIGKILL, Ctrl-C) the
// pipe reaches EOF and the watchdog shuts the postmasters down (immediate
// mode for a temporary base directory, which it then removes; fast mode for
// a kept one). Env.Stop does the same work itself
// and then dismisses the watchdog.
//
// It runs in its own session so a Ctrl-C sent to the terminal's process group
// does not kill it before it has done its job.
type watchdog struct {
	cmd  *exec.Cmd
	pipe *os.File // write end; closing it (or dying) triggers the cleanup
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// watchdogScript returns the script that stops the postmasters of dataDirs and
// then removes removeDir (if not empty).
func watchdogScript(dataDirs []string, removeDir string) string {
	var b strings.Builder
	b.WriteString("trap '' HUP INT TERM PIPE\n")
	b.WriteString("read _\n")
	var quoted []string
	for _, d := range dataDirs {
		quoted = append(quoted, shellQuote(d))
	}
	dirs := strings.Join(quoted, " ")
	// SIGQUIT is PostgreSQL's "immediate shutdown", for throwaway data;
	// SIGINT its "fast shutdown", which keeps every commit of a kept
	// directory. Only signal a process whose working directory is the data
	// directory (when /proc tells), so a recycled pid from a stale
	// postmaster.pid is never hit.
	sig := "INT"
	if removeDir != "" {
		sig = "QUIT"
	}
	fmt.Fprintf(&b, `for d in %s; do
  pid=$(head -n 1 "$d/postmaster.pid" 2>/dev/null) || continue
  [ -n "$pid" ] || continue
  if [ -e "/proc/$pid/cwd" ] && [ "$(readlink "/proc/$pid/cwd")" != "$d" ]; then continue; fi
  kill -%s "$pid" 2>/dev/null
done
i=0
while [ $i -lt 150 ]; do
  alive=0
  for d in %s; do [ -f "$d/postmaster.pid" ] && alive=1; done
  [ $alive = 0 ] && break
  sleep 0.1
  i=$((i+1))
done
`, dirs, sig, dirs)
	if removeDir != "" {
		fmt.Fprintf(&b, "rm -rf %s\n", shellQuote(removeDir))
	}
	return b.String()
}

func startWatchdog(dataDirs []string, removeDir string) (*watchdog, error) {
	r, w, err := os.Pipe() // both ends are close-on-exec in this process
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript(dataDirs, removeDir))
	cmd.Stdin = r // dup'ed onto fd 0 of the child only
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start cleanup watchdog: %w", err)
	}
	r.Close()
	return &watchdog{cmd: cmd, pipe: w}, nil
}

// dismiss stops the watchdog without letting it act.
func (wd *watchdog) dismiss() {
	if wd == nil {
		return
	}
	_ = syscall.Kill(-wd.cmd.Process.Pid, syscall.SIGKILL) // its session = its process group
	_ = wd.cmd.Process.Kill()
	done := make(chan struct{})
	go func() { _ = wd.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	wd.pipe.Close()
}

package benchkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a long-running child (pgbouncer, shardgate serve). It runs in its
// own process group, so a Ctrl-C on the terminal reaches only the harness,
// which then stops it in order; and it gets SIGKILL should the harness die
// without cleaning up (Pdeathsig).
type Proc struct {
	Name    string
	LogPath string // its stdout and stderr

	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// StartProc starts bin with args, its stdout and stderr going to logPath.
// cred, when not nil, makes it run as another account.
func StartProc(name, logPath string, cred *syscall.Credential, bin string, args ...string) (*Proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own copy
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = ChildEnv()
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, LogPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the process's exit error once it has ended (nil: status 0).
func (p *Proc) Err() error { return p.err }

// ExitError describes how the process ended, with the tail of its log.
func (p *Proc) ExitError() error {
	return fmt.Errorf("%s exited (%v); tail of %s:\n%s", p.Name, p.err, p.LogPath, FileTail(p.LogPath, 15))
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *Proc) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// WaitPort waits until 127.0.0.1:port accepts connections, p exits, or
// timeout passes.
func WaitPort(ctx context.Context, port int, p *Proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if p != nil && p.Exited() {
			return p.ExitError()
		}
		if time.Now().After(deadline) {
			tail := ""
			if p != nil {
				tail = fmt.Sprintf("; tail of %s:\n%s", p.LogPath, FileTail(p.LogPath, 15))
			}
			return fmt.Errorf("nothing listens on %s after %s%s", addr, timeout, tail)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// FreePort returns a loopback port nobody listens on right now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// RunCmd runs a short command to completion, bounded by timeout, and returns
// its combined output. If logPath is not empty the output is also saved there.
func RunCmd(ctx context.Context, timeout time.Duration, logPath string, env []string, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	var w io.Writer = &out
	if logPath != "" {
		if f, err := os.Create(logPath); err == nil {
			defer f.Close()
			w = io.MultiWriter(&out, f)
		}
	}
	cmd.Stdout, cmd.Stderr = w, w
	if env == nil {
		env = ChildEnv()
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", err, ctx.Err())
	}
	return out.String(), err
}

// ChildEnv is this process's environment without libpq variables (PGHOST,
// PGPORT, PGSSLMODE, ... would redirect or change the clients), with the C
// locale so that output parses (pgbench prints numbers with the locale's
// decimal point).
func ChildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || strings.HasPrefix(k, "LC_") || k == "LANG" || k == "LANGUAGE" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "LANG=C")
}

// PostgresCredential returns the credential to run servers that refuse root
// (pgbouncer) with: nil when this process is not root, else the "postgres"
// account's. (Equivalent to `runuser -u postgres --`, but the child stays our
// direct child, so it can be signalled by pid and dies with the harness.)
func PostgresCredential() (*syscall.Credential, int, int, error) {
	if os.Geteuid() != 0 {
		return nil, -1, -1, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("running as root, and pgbouncer refuses root, but there is no postgres account: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return nil, 0, 0, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(gid)}}, uid, gid, nil
}

// FileTail returns the last n lines of a file.
func FileTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return LastLines(string(b), n)
}

// LastLines returns the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

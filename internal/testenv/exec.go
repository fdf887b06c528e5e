package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// owner is the OS account the PostgreSQL processes run as. PostgreSQL refuses
// to run as root, so when this process is root the server runs as the
// "postgres" account and its directories are owned by it.
type owner struct {
	name     string
	uid, gid int
	asOther  bool // true when commands must switch to uid/gid (we are root)
}

// resolveOwner decides who runs the server: this process, or "postgres" when
// this process is root.
func resolveOwner() (*owner, error) {
	if os.Geteuid() != 0 {
		return &owner{name: "current user", uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses to run as root, but there is no %q user to run it as "+
			"(create one, e.g. `useradd --system postgres`, or run the tests as an ordinary user): %w", "postgres", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user postgres has a non-numeric uid/gid %q/%q", u.Uid, u.Gid)
	}
	return &owner{name: "postgres", uid: uid, gid: gid, asOther: true}, nil
}

// chown gives path to the server's account (no-op unless we are root).
func (o *owner) chown(path string) error {
	if !o.asOther {
		return nil
	}
	return os.Lchown(path, o.uid, o.gid)
}

// checkAccess fails unless the server's account can enter and write dir
// (a BaseDir under /root, or under a 0700 temporary directory, is not).
func (o *owner) checkAccess(dir string) error {
	if !o.asOther {
		return nil
	}
	cmd := o.command(context.Background(), "/bin", "/", "sh", "-c", `cd "$1" && test -w .`, "sh", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("the %s account cannot enter and write %s (%v %s); PostgreSQL runs as %s because this process is root: "+
			"use a directory whose parents are world-traversable, e.g. under /tmp", o.name, dir, err, strings.TrimSpace(string(out)), o.name)
	}
	return nil
}

// command builds a command that runs bin/name as the server's account, in
// directory dir (which that account must be able to enter: initdb and pg_ctl
// fail when they cannot read their working directory).
func (o *owner) command(ctx context.Context, bin, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = dir
	cmd.Env = childEnv()
	cmd.WaitDelay = 5 * time.Second
	if o.asOther {
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.gid), Groups: []uint32{uint32(o.gid)}},
		}
	}
	return cmd
}

// run runs a command and returns its combined output; the error includes it.
func (o *owner) run(ctx context.Context, bin, dir, name string, args ...string) (string, error) {
	cmd := o.command(ctx, bin, dir, name, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// childEnv is this process's environment without the libpq/server variables
// that would redirect initdb or pg_ctl (PGDATA, PGPORT, ...), with messages in
// English so errors can be recognised.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || k == "LC_ALL" || k == "LC_MESSAGES" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_MESSAGES=C")
}

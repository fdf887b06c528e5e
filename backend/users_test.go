package backend

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/sqlerr"
)

// TestPoolPerRole: one cluster's pool lends each role only its own
// connections (current_user is the role's), bounds a role by user_size
// (53300 naming the role) and all roles by size, gives a full pool's slot
// to another role by closing the longest-idle connection of someone else,
// reports each role (Users, for SHOW POOLS), and reaps every role's idle
// connections to zero (after RoleIdleTimeout without an idle timeout). Before, a pool had one login, the DSN's user.
func TestPoolPerRole(t *testing.T) {
	env := testenv.Shared(t)
	c := env.Clusters[0]
	ctx := context.Background()
	for _, r := range []string{"sg_u1", "sg_u2", "sg_u3"} {
		if err := c.Exec(ctx, "", "DROP ROLE IF EXISTS "+r+"; CREATE ROLE "+r+" LOGIN"); err != nil {
			t.Fatal(err)
		}
	}
	p := NewPool("pg0", c.DSN(""), 2, 200*time.Millisecond, 5*time.Second, 0)
	defer p.Close()
	p.SetUserSize(1)
	as := func(u string) Login { return Login{User: u} }
	current := func(b *Conn) string {
		rows, err := b.Query("SELECT current_user")
		if err != nil {
			t.Fatal(err)
		}
		return string(rows[0][0])
	}
	a, err := p.AcquireAs(nil, as("sg_u1"))
	if err != nil || current(a) != "sg_u1" {
		t.Fatalf("sg_u1: %v", err)
	}
	if _, err := p.AcquireAs(nil, as("sg_u1")); sqlerr.Code(err) != "53300" || !strings.Contains(err.Error(), `role "sg_u1"`) {
		t.Fatalf("second of sg_u1 past user_size 1: %v", err)
	}
	b, err := p.AcquireAs(nil, as("sg_u2"))
	if err != nil || current(b) != "sg_u2" {
		t.Fatalf("sg_u2: %v", err)
	}
	p.Release(a)
	// Full (sg_u1 idle, sg_u2 lent): sg_u3 takes sg_u1's slot.
	c3, err := p.AcquireAs(nil, as("sg_u3"))
	if err != nil || current(c3) != "sg_u3" {
		t.Fatalf("sg_u3 in a full pool: %v", err)
	}
	if open, idle := p.Stats(); open != 2 || idle != 0 {
		t.Fatalf("open %d idle %d, want 2 0", open, idle)
	}
	p.Release(b)
	p.Release(c3)
	again, err := p.AcquireAs(nil, as("sg_u2"))
	if err != nil || again != b {
		t.Fatalf("sg_u2 must get its own idle connection back: %v", err)
	}
	p.Release(again)
	got := p.Users()
	if len(got) != 2 || got[0].User != "sg_u2" || got[1].User != "sg_u3" || got[0].Idle != 1 || got[1].Open != 1 {
		t.Fatalf("Users = %+v", got)
	}
	svc, err := p.Acquire(ctx) // the DSN's user: a role of its own
	if err != nil || current(svc) != "postgres" {
		t.Fatalf("service identity: %v", err)
	}
	p.Release(svc)
	// Without an idle timeout, the roles' idle connections still go
	// after RoleIdleTimeout; the DSN user's stay.
	defer func(d time.Duration) { RoleIdleTimeout = d }(RoleIdleTimeout)
	RoleIdleTimeout = time.Millisecond
	time.Sleep(5 * time.Millisecond)
	p.ReapIdle()
	if got := p.Users(); len(got) != 1 || got[0].User != "" || got[0].Idle != 1 {
		t.Fatalf("after RoleIdleTimeout: %+v, want only the DSN user's idle connection", got)
	}
	p.SetTimeouts(200*time.Millisecond, 5*time.Second, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	p.ReapIdle()
	if got := p.Users(); len(got) != 0 {
		t.Fatalf("after the idle timeout: %+v, want none", got)
	}
}

package proxy

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/auth"
)

// Under trust, an admin user opens the console with no password, as in
// pgbouncer: the proxy says so loudly at start-up, naming the admin
// users, and again each time such a console is opened.
func TestTrustAdminConsoleWarns(t *testing.T) {
	var logs syncBuffer
	p := startProxy(t, shopTopology(""), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.Users = []auth.User{{Name: "app", Password: "x"}, {Name: "boss", Password: "x", Admin: true}}
	})
	if out := logs.String(); !strings.Contains(out, "level=WARN msg=\"ADMIN CONSOLE WITHOUT PASSWORD: proxy.auth.method is trust") || !strings.Contains(out, "admin_users=boss") {
		t.Fatalf("no start-up warning naming the admin users:\n%s", out)
	}
	con := connect(t, adminDSN(p, "boss"))
	showRows(t, con, "SHOW VERSION")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), `msg="admin console opened without a password (proxy.auth.method is trust)" user=boss`) {
		if time.Now().After(deadline) {
			t.Fatalf("opening the console under trust logs no warning:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/routestate"
)

// TestServeFollowsRoutingRevisions: serve registers in main's proxies and
// follows a routing revision; `topology show --effective` prints the
// routing in force with the revision it came from.
func TestServeFollowsRoutingRevisions(t *testing.T) {
	s := serveExample(t, "")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.dsns["pg0"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ps, err := routestate.Proxies(ctx, conn)
	var mine *routestate.Proxy
	for i := range ps {
		if ps[i].Addr == s.addr {
			mine = &ps[i]
		}
	}
	if err != nil || mine == nil || !mine.Live {
		t.Fatalf("serve not registered: %+v %v", ps, err)
	}
	cur, err := routestate.Load(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := routestate.Commit(ctx, conn, cur.Rev, "test", "orders_by_id backfilled", func(st *routestate.State) error {
		st.GSI = map[string]string{"orders_by_id": routestate.GSIActive}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DELETE FROM shardgate.routing_revisions WHERE rev > $1", cur.Rev)
	})
	deadline := time.Now().Add(3 * time.Second)
	for {
		ps, _ := routestate.Proxies(ctx, conn)
		if i := indexOfAddr(ps, s.addr); i >= 0 && ps[i].Revision == rev.Rev {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not follow revision %d", rev.Rev)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(s.logs.String(), "routing revision installed") {
		t.Errorf("no log of the installed revision:\n%s", s.logs.String())
	}
	out, _, err := run("topology", "show", "--effective", s.file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "orders_by_id") || !strings.Contains(out, "secondary index (active)") ||
		!strings.Contains(out, "groups.by_customer.secondary_indexes.orders_by_id: revision") || !strings.Contains(out, "by test (orders_by_id backfilled)") {
		t.Fatalf("topology show --effective:\n%s", out)
	}
}

func indexOfAddr(ps []routestate.Proxy, addr string) int {
	for i, p := range ps {
		if p.Addr == addr {
			return i
		}
	}
	return -1
}

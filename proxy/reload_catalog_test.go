package proxy

import (
	"testing"
	"time"

	"github.com/shardgate/shardgate/topology"
)

// A routing revision's reload over the same pools (a switch's) keeps the
// catalog of relations that run code (unseenrel.go): it was read from the
// same clusters, and the statements a switch releases right after it are
// not each checked while every cluster reads it again. A reload of the
// file alone (RELOAD) reads it again.
func TestReloadOfARevisionKeepsTheCodeCatalog(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	read := func() *routing {
		t.Helper()
		mustExec(t, c, "SELECT count(*) FROM countries") // starts the read
		deadline := time.Now().Add(10 * time.Second)
		for p.srv.cur.Load().code.names.Load() == nil {
			if time.Now().After(deadline) {
				t.Fatal("the catalog of relations that run code was not read")
			}
			time.Sleep(10 * time.Millisecond)
		}
		return p.srv.cur.Load()
	}
	reload := func(overrides ...topology.Override) *routing {
		t.Helper()
		topo, err := parseTopo(shopTopology(""))
		if err != nil {
			t.Fatal(err)
		}
		topo.Overrides = overrides
		if err := p.srv.Reload(topo); err != nil {
			t.Fatal(err)
		}
		return p.srv.cur.Load()
	}
	before := read()
	after := reload(topology.Override{Key: "groups.by_customer", Origin: "revision 1 by test (workflow 1 switch)"})
	if after == before {
		t.Fatal("the reload installed no routing")
	}
	if after.code.names.Load() == nil || after.code.readAt.Load() != before.code.readAt.Load() {
		t.Fatal("the revision's reload dropped the catalog of relations that run code")
	}
	if again := reload(after.topo.Overrides...); again.code.names.Load() != nil {
		t.Fatal("a reload of the file alone kept the catalog of relations that run code")
	}
}

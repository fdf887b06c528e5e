package topology

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// diffBase has one group of each kind; the edits below change one thing
// at a time.
const diffBase = `version: 1
clusters:
  pg0: { dsn: "postgres://postgres@127.0.0.1:5441/shop" }
  pg1: { dsn: "postgres://postgres@127.0.0.1:5442/shop" }
groups:
  main:
    unsharded: true
    cluster: pg0
    tables: [settings]
    sequences: [customers_id_seq, orders_id_seq]
  archive:
    unsharded: true
    cluster: pg1
    tables: [old_orders]
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards:
      "-80": pg0
      "80-": pg1
    tables:
      customers: { column: id, sequence: { column: id, name: customers_id_seq } }
      orders: { sequence: { column: id, name: orders_id_seq } }
    reference: [countries]
    secondary_indexes:
      orders_by_id: { table: orders, column: id, type: bigint, state: backfilling }
  catalog:
    index: { name: by_sku, expression: "lower(sku)", type: text, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables: { products: {} }
  ranged:
    index: { column: id, type: bigint, function: range }
    shards:
      - { to: 100, cluster: pg0 }
      - { from: 100, cluster: pg1 }
    tables: { events: {} }
  mod:
    index: { column: id, type: integer, function: modulo }
    shards: [pg0, pg1]
    tables: { logs: {} }
  spare:
    index: { column: id, type: bigint, function: xxhash }
    shards: { "-": pg0 }
`

// edit replaces old with new in the base file; old must occur exactly once.
type edit struct{ old, new string }

func mustParse(t *testing.T, yaml string) *Topology {
	t.Helper()
	topo, err := Parse("t.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("topology does not parse: %v\n%s", err, yaml)
	}
	return topo
}

func edited(t *testing.T, base string, edits []edit) string {
	t.Helper()
	for _, e := range edits {
		if n := strings.Count(base, e.old); n != 1 {
			t.Fatalf("edit %q matches %d times", e.old, n)
		}
		base = strings.Replace(base, e.old, e.new, 1)
	}
	return base
}

func planLines(p *ReloadPlan) []string {
	var out []string
	for _, c := range p.Changes {
		line := c.Class.String() + ": " + c.Message
		if c.Empty != nil {
			line += fmt.Sprintf(" [if %s is empty on %s]", c.Empty.Table, strings.Join(c.Empty.Clusters, ","))
		}
		out = append(out, line)
	}
	return out
}

func checkLines(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

const (
	refuseData = ": " + hintMoveData
	refuseDSN  = ": " + hintDSN
	refuseView = ": " + hintView
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name  string
		edits []edit
		want  []string
	}{
		{"unchanged", nil, nil},

		// Where keys live.
		{"shard moves to another cluster", []edit{{"      \"80-\": pg1\n", "      \"80-\": pg0\n"}}, []string{
			"refused: shard 80- of group by_customer moves from cluster pg1 to pg0" + refuseData}},
		{"split on the same cluster", []edit{{"      \"80-\": pg1\n", "      \"80-c0\": pg1\n      \"c0-\": pg1\n"}}, []string{
			"applied: shards of group by_customer change from -80 on pg0, 80- on pg1 to -80 on pg0, 80-c0 on pg1, c0- on pg1; no key changes database"}},
		{"split onto another cluster", []edit{{"      \"80-\": pg1\n", "      \"80-c0\": pg1\n      \"c0-\": pg0\n"}}, []string{
			"refused: keys c0- of group by_customer move from cluster pg1 (shard 80-) to pg0 (shard c0-)" + refuseData}},
		{"merge", []edit{{`"-80": pg0
      "80-": pg1`, `"-": pg0`}}, []string{
			"refused: keys 80- of group by_customer move from cluster pg1 (shard 80-) to pg0 (shard -)" + refuseData}},
		{"range bound moves", []edit{{"to: 100, cluster: pg0", "to: 50, cluster: pg0"}, {"from: 100, cluster: pg1", "from: 50, cluster: pg1"}}, []string{
			"refused: keys 50-100 of group ranged move from cluster pg0 (shard -100) to pg1 (shard 50-)" + refuseData}},
		{"range no longer covered", []edit{{"{ to: 100, cluster: pg0 }", "{ from: 0, to: 100, cluster: pg0 }"}}, []string{
			"refused: keys -0 of group ranged are no longer covered by any shard; they live on cluster pg0 (shard -100)" + refuseData}},
		{"range split on the same clusters", []edit{{"- { from: 100, cluster: pg1 }", "- { from: 100, to: 200, cluster: pg1 }\n      - { from: 200, cluster: pg1 }"}}, []string{
			"applied: shards of group ranged change from -100 on pg0, 100- on pg1 to -100 on pg0, 100-200 on pg1, 200- on pg1; no key changes database"}},
		{"modulo shards swap", []edit{{"shards: [pg0, pg1]", "shards: [pg1, pg0]"}}, []string{
			"refused: shard 0 of group mod moves from cluster pg0 to pg1" + refuseData,
			"refused: shard 1 of group mod moves from cluster pg1 to pg0" + refuseData}},
		{"modulo doubled in place", []edit{{"shards: [pg0, pg1]", "shards: [pg0, pg1, pg0, pg1]"}}, []string{
			"applied: shards of group mod change from 0 on pg0, 1 on pg1 to 0 on pg0, 1 on pg1, 2 on pg0, 3 on pg1; no key changes database"}},
		{"modulo doubled across", []edit{{"shards: [pg0, pg1]", "shards: [pg0, pg1, pg1, pg0]"}}, []string{
			"refused: keys with key mod 4 in (2) of group mod move from cluster pg0 (shard 0) to pg1 (shard 2)" + refuseData,
			"refused: keys with key mod 4 in (3) of group mod move from cluster pg1 (shard 1) to pg0 (shard 3)" + refuseData}},
		{"index column", []edit{{"column: customer_id,", "column: cust_id,"}}, []string{
			"refused: index of group by_customer changes its key from column customer_id to column cust_id" + refuseData}},
		{"index expression", []edit{{`"lower(sku)"`, `"upper(sku)"`}}, []string{
			"refused: index of group catalog changes its key from expression lower(sku) to expression upper(sku)" + refuseData}},
		{"index type", []edit{{"type: integer, function: modulo", "type: bigint, function: modulo"}}, []string{
			"refused: index of group mod changes its type from integer to bigint" + refuseData}},
		{"index function", []edit{{"function: modulo }\n    shards: [pg0, pg1]", "function: range }\n    shards: [{ to: 0, cluster: pg0 }, { from: 0, cluster: pg1 }]"}}, []string{
			"refused: index of group mod changes its function from modulo to range" + refuseData}},
		{"index renamed", []edit{{"name: by_sku", "name: by_lower_sku"}}, []string{
			"applied: index of group catalog renamed from by_sku to by_lower_sku"}},
		{"main moves", []edit{{"cluster: pg0\n    tables: [settings]", "cluster: pg1\n    tables: [settings]"}}, []string{
			"refused: the main group moves from cluster pg0 to pg1" + refuseData}},
		{"unsharded group moves", []edit{{"cluster: pg1\n    tables: [old_orders]", "cluster: pg0\n    tables: [old_orders]"}}, []string{
			"refused: group archive moves from cluster pg1 to pg0" + refuseData}},
		{"unsharded group becomes sharded", []edit{{"unsharded: true\n    cluster: pg1\n    tables: [old_orders]", "index: { name: by_old, column: id, type: bigint, function: xxhash }\n    shards: { \"-\": pg1 }\n    tables: { old_orders: {} }"}}, []string{
			"refused: group archive changes from unsharded on cluster pg1 to sharded by column id, shards - on pg1" + refuseData,
			"applied: table public.old_orders of group archive changes from a table to a member table [if public.old_orders is empty on pg1]"}},

		// Clusters.
		{"dsn points elsewhere", []edit{{"127.0.0.1:5442/shop", "10.0.0.9:5432/shop"}}, []string{
			"applied: cluster pg1 now points to 10.0.0.9:5432/shop instead of 127.0.0.1:5442/shop",
			"refused: group archive moves to another database: cluster pg1 now points to 10.0.0.9:5432/shop instead of 127.0.0.1:5442/shop" + refuseDSN,
			"refused: shard 80- of group by_customer moves to another database: cluster pg1 now points to 10.0.0.9:5432/shop instead of 127.0.0.1:5442/shop" + refuseDSN,
			"refused: shard 80- of group catalog moves to another database: cluster pg1 now points to 10.0.0.9:5432/shop instead of 127.0.0.1:5442/shop" + refuseDSN,
			"refused: shard 100- of group ranged moves to another database: cluster pg1 now points to 10.0.0.9:5432/shop instead of 127.0.0.1:5442/shop" + refuseDSN,
			"refused: shard 1 of group mod moves to another database: cluster pg1 now points to 10.0.0.9:5432/shop instead of 127.0.0.1:5442/shop" + refuseDSN}},
		{"dsn to another database", []edit{{"127.0.0.1:5442/shop", "127.0.0.1:5442/shop2"}}, []string{
			"applied: cluster pg1 now points to 127.0.0.1:5442/shop2 instead of 127.0.0.1:5442/shop",
			"refused: group archive moves to another database: cluster pg1 now points to 127.0.0.1:5442/shop2 instead of 127.0.0.1:5442/shop" + refuseDSN,
			"refused: shard 80- of group by_customer moves to another database: cluster pg1 now points to 127.0.0.1:5442/shop2 instead of 127.0.0.1:5442/shop" + refuseDSN,
			"refused: shard 80- of group catalog moves to another database: cluster pg1 now points to 127.0.0.1:5442/shop2 instead of 127.0.0.1:5442/shop" + refuseDSN,
			"refused: shard 100- of group ranged moves to another database: cluster pg1 now points to 127.0.0.1:5442/shop2 instead of 127.0.0.1:5442/shop" + refuseDSN,
			"refused: shard 1 of group mod moves to another database: cluster pg1 now points to 127.0.0.1:5442/shop2 instead of 127.0.0.1:5442/shop" + refuseDSN}},
		{"dsn password and tls", []edit{{"postgres://postgres@127.0.0.1:5442/shop", "postgres://postgres:secret@127.0.0.1:5442/shop?sslmode=require&connect_timeout=3"}}, []string{
			"applied: cluster pg1: dsn changes, same database 127.0.0.1:5442/shop"}},
		{"dsn user", []edit{{"postgres://postgres@127.0.0.1:5442/shop", "postgres://app:secret@127.0.0.1:5442/shop"}}, []string{
			"refused: cluster pg1: dsn changes what statements see in database 127.0.0.1:5442/shop: user \"postgres\" becomes \"app\"" + refuseView}},
		{"dsn options", []edit{{"postgres://postgres@127.0.0.1:5442/shop", "postgres://postgres@127.0.0.1:5442/shop?options=-csearch_path%3Dshadow"}}, []string{
			"refused: cluster pg1: dsn changes what statements see in database 127.0.0.1:5442/shop: options \"-csearch_path=shadow\" added" + refuseView}},
		{"dsn guc and target_session_attrs", []edit{{"postgres://postgres@127.0.0.1:5442/shop", "postgres://postgres@127.0.0.1:5442/shop?search_path=shadow&target_session_attrs=read-only"}}, []string{
			"refused: cluster pg1: dsn changes what statements see in database 127.0.0.1:5442/shop: search_path \"shadow\" added, target_session_attrs \"read-only\" added" + refuseView}},
		{"cluster added", []edit{{"clusters:\n", "clusters:\n  pg2: { dsn: \"postgres://h2/shop\" }\n"}, {`"-": pg0`, `"-": pg2`}}, []string{
			"applied: cluster pg2 added (h2:5432/shop)",
			"applied: shards of group spare change from - on pg0 to - on pg2 (it names no table)"}},

		// Tables.
		{"table new to the file joins a group", []edit{{"tables: { products: {} }", "tables: { products: {}, reviews: {} }"}}, []string{
			"applied: table public.reviews moves from main to group catalog [if public.reviews is empty on pg0]"}},
		{"table leaves its group", []edit{{"    tables: { products: {} }\n", ""}}, []string{
			"applied: table public.products moves from group catalog to main [if public.products is empty on pg0,pg1]"}},
		{"table moves between groups", []edit{{"tables: { events: {} }", "tables: { events: {}, products: {} }"}, {"    tables: { products: {} }\n", ""}}, []string{
			"applied: table public.products moves from group catalog to group ranged [if public.products is empty on pg0,pg1]"}},
		{"new reference table", []edit{{"reference: [countries]", "reference: [countries, currencies]"}}, []string{
			"applied: table public.currencies moves from main to group by_customer as a reference table [if public.currencies is empty on pg0]"}},
		{"reference becomes member", []edit{{"reference: [countries]", "reference: []"}, {"orders: { sequence", "countries: {}\n      orders: { sequence"}}, []string{
			"applied: table public.countries of group by_customer changes from a reference table to a member table [if public.countries is empty on pg0,pg1]"}},
		{"member key column", []edit{{"customers: { column: id,", "customers: { column: cid,"}}, []string{
			"applied: table public.customers of group by_customer changes its key column from id to cid [if public.customers is empty on pg0,pg1]"}},
		{"main table into an unsharded group elsewhere", []edit{{"tables: [old_orders]", "tables: [old_orders, audit]"}}, []string{
			"applied: table public.audit moves from main to group archive [if public.audit is empty on pg0]"}},
		{"main table into an unsharded group in the same database", []edit{{"  archive:\n", "  side: { unsharded: true, cluster: pg0, tables: [audit] }\n  archive:\n"}}, []string{
			"applied: group side added (unsharded on cluster pg0)",
			"applied: table public.audit moves from main to group side, in the same database 127.0.0.1:5441/shop"}},
		{"table named in main no more", []edit{{"    tables: [settings]\n", ""}}, []string{
			"applied: table public.settings is no longer named; it stays in main"}},

		// Groups without tables hold no rows.
		{"new group", []edit{{"  spare:\n", "  fresh:\n    index: { column: id, type: bigint, function: xxhash }\n    shards: { \"-80\": pg0, \"80-\": pg1 }\n    tables: { visits: {} }\n  spare:\n"}}, []string{
			"applied: group fresh added (sharded by column id, shards -80 on pg0, 80- on pg1)",
			"applied: table public.visits moves from main to group fresh [if public.visits is empty on pg0]"}},
		{"empty group reshaped", []edit{{"function: xxhash }\n    shards: { \"-\": pg0 }", "function: modulo }\n    shards: [pg1, pg0]"}}, []string{
			"applied: index of group spare changes its function from xxhash to modulo (it names no table)",
			"applied: shards of group spare change from - on pg0 to 0 on pg1, 1 on pg0 (it names no table)"}},
		{"empty group removed", []edit{{"  spare:\n    index: { column: id, type: bigint, function: xxhash }\n    shards: { \"-\": pg0 }\n", ""}}, []string{
			"applied: group spare removed"}},

		// Secondary indexes and sequences.
		{"secondary index activated", []edit{{"state: backfilling", "state: active"}}, []string{
			"refused: secondary index orders_by_id changes state from backfilling to active by an edit of the file: entries for rows written before it existed may be missing, and reads through it would miss those rows: keep it backfilling: shardgate has no backfill yet to fill and verify its entries for the rows written before it was added"}},
		{"secondary index added as active", []edit{{"orders_by_id: { table: orders, column: id, type: bigint, state: backfilling }", "orders_by_id: { table: orders, column: id, type: bigint, state: backfilling }\n      orders_by_total: { table: orders, column: total, type: bigint, state: active }"}}, []string{
			"refused: secondary index orders_by_total added on public.orders.total (bigint) in group by_customer as active: its lookup table has no entries for the rows already there, so reads through it would miss them: add it in state backfilling: it is then kept on every write but not read until a backfill has filled and verified it"}},
		{"secondary index added and removed", []edit{{"orders_by_id: {", "orders_by_total: {"}}, []string{
			"applied: secondary index orders_by_total added on public.orders.id (bigint) in group by_customer, state backfilling",
			"applied: secondary index orders_by_id of group by_customer removed"}},
		{"active secondary index redefined", []edit{{"column: id, type: bigint, state: backfilling", "column: total, type: bigint, state: active"}}, []string{
			"refused: secondary index orders_by_id changes from public.orders.id (bigint) in group by_customer to public.orders.total (bigint) in group by_customer while active: its entries were built for the old definition: remove it, reload, then add the new definition in state backfilling"}},
		{"sequences", []edit{{"sequences: [customers_id_seq, orders_id_seq]", "sequences: [customers_id_seq, orders_seq]"}, {"name: orders_id_seq", "name: orders_seq"}}, []string{
			"applied: sequence public.orders_seq added to main",
			"applied: sequence public.orders_id_seq removed from main",
			"applied: table public.orders: column id from sequence public.orders_seq, was column id from sequence public.orders_id_seq"}},
		{"shard-key updates move rows", []edit{{"orders: { sequence", "orders: { shard_key_update: move_row, sequence"}}, []string{
			"applied: table public.orders: shard_key_update move_row, was refuse"}},
	}
	old := mustParse(t, diffBase)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLines(t, planLines(Diff(old, mustParse(t, edited(t, diffBase, tc.edits)))), tc.want)
		})
	}
}

func TestDiffClusterRenamed(t *testing.T) {
	old := mustParse(t, diffBase)
	renamed := mustParse(t, strings.ReplaceAll(diffBase, "pg1", "pg9"))
	checkLines(t, planLines(Diff(old, renamed)), []string{
		"applied: cluster pg9 added (127.0.0.1:5442/shop)",
		"applied: cluster pg1 removed",
		"applied: group archive moves from cluster pg1 to pg9, the same database 127.0.0.1:5442/shop",
		"applied: shards of group by_customer change from -80 on pg0, 80- on pg1 to -80 on pg0, 80- on pg9; no key changes database",
		"applied: shards of group catalog change from -80 on pg0, 80- on pg1 to -80 on pg0, 80- on pg9; no key changes database",
		"applied: shards of group ranged change from -100 on pg0, 100- on pg1 to -100 on pg0, 100- on pg9; no key changes database",
		"applied: shards of group mod change from 0 on pg0, 1 on pg1 to 0 on pg0, 1 on pg9; no key changes database",
	})
}

const diffProxyBase = `version: 1
clusters: { pg0: { dsn: "postgres://h/db" } }
groups: { main: { unsharded: true, cluster: pg0 } }
proxy:
  listen: 127.0.0.1:6432
  auth:
    method: md5
    users:
      app: { password: secret }
      old: { password: x }
  tls: { cert: a.crt, key: a.key }
  pool: { mode: transaction, size: 10, max_wait: 5s, idle_timeout: 0s }
  timeouts: { connect: 5s, query: 0s }
  commit: two_phase
`

func TestDiffProxy(t *testing.T) {
	tests := []struct {
		name  string
		edits []edit
		want  []string
	}{
		{"listen", []edit{{"listen: 127.0.0.1:6432", "listen: 0.0.0.0:6432"}}, []string{
			"needs a restart: proxy.listen changes from 127.0.0.1:6432 to 0.0.0.0:6432"}},
		{"auth", []edit{{"method: md5", "method: scram-sha-256"}, {"app: { password: secret }", "app: { password: secret2 }\n      new: { password: y }"}, {"      old: { password: x }\n", ""}}, []string{
			"applied: proxy.auth.method changes from md5 to scram-sha-256",
			"applied: proxy.auth.users: password of user app changed",
			"applied: proxy.auth.users: user new added",
			"applied: proxy.auth.users: user old removed"}},
		{"admin", []edit{{"app: { password: secret }", "app: { password: secret, admin: true }"}}, []string{
			"applied: proxy.auth.users: admin of user app changes to true"}},
		{"slow statement log", []edit{{"commit: two_phase", "commit: two_phase\n  log: { slow_statement: 250ms }"}}, []string{
			"applied: proxy.log.slow_statement changes from 0s to 250ms"}},
		{"statement sampling and query statistics", []edit{{"commit: two_phase", "commit: two_phase\n  log: { sample_statements: 0.01 }\n  query_stats: { max: 100 }"}}, []string{
			"applied: proxy.log.sample_statements changes from 0 to 0.01",
			"needs a restart: proxy.query_stats.max changes from 5000 to 100"}},
		{"tls files", []edit{{"cert: a.crt, key: a.key", "cert: b.crt, key: b.key"}}, []string{
			"applied: proxy.tls.cert changes from a.crt to b.crt",
			"applied: proxy.tls.key changes from a.key to b.key"}},
		{"tls off", []edit{{"  tls: { cert: a.crt, key: a.key }\n", ""}}, []string{
			"needs a restart: proxy.tls removed: TLS is turned off"}},
		{"pool", []edit{{"mode: transaction, size: 10, max_wait: 5s, idle_timeout: 0s", "mode: session, size: 20, max_wait: 1s, idle_timeout: 1m"}}, []string{
			"needs a restart: proxy.pool.mode changes from transaction to session",
			"applied: proxy.pool.size changes from 10 to 20",
			"applied: proxy.pool.max_wait changes from 5s to 1s",
			"applied: proxy.pool.idle_timeout changes from 0s to 1m0s"}},
		{"timeouts and commit", []edit{{"connect: 5s, query: 0s", "connect: 2s, query: 30s, shutdown: 1m"}, {"commit: two_phase", "commit: best_effort"}}, []string{
			"applied: proxy.timeouts.connect changes from 5s to 2s",
			"applied: proxy.timeouts.query changes from 0s to 30s",
			"applied: proxy.timeouts.shutdown changes from 30s to 1m0s",
			"applied: proxy.commit changes from two_phase to best_effort"}},
	}
	old := mustParse(t, diffProxyBase)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLines(t, planLines(Diff(old, mustParse(t, edited(t, diffProxyBase, tc.edits)))), tc.want)
		})
	}
	noTLS := mustParse(t, edited(t, diffProxyBase, []edit{{"  tls: { cert: a.crt, key: a.key }\n", ""}}))
	checkLines(t, planLines(Diff(noTLS, old)), []string{"needs a restart: proxy.tls added: TLS is turned on"})
}

// TestAppliedKeysAndAuthUsers: the keys a reload applies (a key that
// needs a restart is not one) and the users in package auth's form.
func TestAppliedKeysAndAuthUsers(t *testing.T) {
	old := mustParse(t, diffProxyBase)
	n := mustParse(t, edited(t, diffProxyBase, []edit{{"listen: 127.0.0.1:6432", "listen: 0.0.0.0:6432"},
		{"app: { password: secret }", "app: { password: secret2, admin: true }"}, {"commit: two_phase", "commit: best_effort"}}))
	got := Diff(old, n).AppliedKeys()
	if want := map[string]bool{"proxy.auth.users": true, "proxy.commit": true}; !maps.Equal(got, want) {
		t.Fatalf("AppliedKeys: %v, want %v", got, want)
	}
	users := n.Proxy.Auth.AuthUsers()
	if len(users) != len(n.Proxy.Auth.Users) {
		t.Fatalf("AuthUsers: %d users, want %d", len(users), len(n.Proxy.Auth.Users))
	}
	for i, u := range n.Proxy.Auth.Users {
		if users[i].Name != u.Name || users[i].Password != u.Password || users[i].Admin != u.Admin {
			t.Fatalf("AuthUsers[%d]: %+v, want %+v", i, users[i], *u)
		}
	}
	if users[0].Name != "app" || !users[0].Admin || users[0].Password != "secret2" {
		t.Fatalf("AuthUsers: %+v", users)
	}
}

// TestDiffCoversProxyConfig fails when ProxyConfig gains a field: classify
// the new setting in differ.proxy (applied, or needs a restart), test it
// in TestDiffProxy, then add it here.
func TestDiffCoversProxyConfig(t *testing.T) {
	classified := []string{
		"Listen", "Auth.Method", "Auth.Users", "TLS", "Pool.Mode", "Pool.Size", "Pool.MaxWait",
		"Pool.IdleTimeout", "Timeouts.Connect", "Timeouts.Query", "Timeouts.Auth", "Timeouts.Shutdown", "Commit", "Database",
		"Log.SlowStatement", "Intermediate.MaxRows", "Intermediate.MaxBytes",
		"Limits.MaxClients", "Limits.MaxBufferedBytes", "Limits.MaxMessageBytes", "Limits.StartupBytes", "Limits.StartupTimeout",
		"Auth.Identity", "Auth.Query", "Pool.UserSize", "Reads.Target", "Reads.ReadOnlyTransactions", "Log.SampleStatements", "QueryStats.Max",
	}
	var fields []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for _, f := range reflect.VisibleFields(typ) {
			if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == typ.PkgPath() {
				walk(prefix+f.Name+".", f.Type)
				continue
			}
			fields = append(fields, prefix+f.Name)
		}
	}
	walk("", reflect.TypeOf(ProxyConfig{}))
	for _, f := range fields {
		if !slices.Contains(classified, f) {
			t.Errorf("ProxyConfig.%s is not classified by Diff (see differ.proxy)", f)
		}
	}
}

func TestReloadPlanVerify(t *testing.T) {
	old := mustParse(t, diffBase)
	new := mustParse(t, edited(t, diffBase, []edit{
		{"tables: { products: {} }", "tables: { products: {}, reviews: {} }"},
		{"reference: [countries]", "reference: [countries, currencies]"},
	}))
	var asked []string
	hasRows := func(cluster string, table QualifiedName) (bool, error) {
		asked = append(asked, table.Name+"@"+cluster)
		return table.Name == "currencies", nil
	}
	plan := Diff(old, new)
	if err := plan.Err(); err == nil {
		t.Fatal("a plan with unverified checks may be applied")
	}
	if err := plan.Verify(hasRows); err != nil {
		t.Fatal(err)
	}
	checkLines(t, asked, []string{"currencies@pg0", "reviews@pg0"})
	checkLines(t, planLines(plan), []string{
		"refused: table public.currencies moves from main to group by_customer as a reference table, and it holds rows on cluster pg0" + refuseData,
		"applied: table public.reviews moves from main to group catalog (it holds no rows on cluster pg0)",
	})
	var re *RefusedError
	if err := plan.Err(); !errors.As(err, &re) || len(re.Changes) != 1 || len(plan.Refused()) != 1 {
		t.Fatalf("Err() = %v, want the one refused change", err)
	}

	left := Diff(old, mustParse(t, edited(t, diffBase, []edit{{"    tables: { products: {} }\n", ""}})))
	if err := left.Verify(func(string, QualifiedName) (bool, error) { return false, nil }); err != nil {
		t.Fatal(err)
	}
	checkLines(t, planLines(left), []string{
		"applied: table public.products moves from group catalog to main (it holds no rows on clusters pg0, pg1)"})
	if err := left.Err(); err != nil {
		t.Fatalf("a verified plan without refusals: %v", err)
	}

	failing := Diff(old, new)
	boom := errors.New("connection refused")
	err := failing.Verify(func(string, QualifiedName) (bool, error) { return false, boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "checking whether table public.currencies holds rows on cluster pg0") {
		t.Fatalf("Verify error = %v", err)
	}
	if failing.Err() == nil {
		t.Fatal("a plan whose check failed may be applied")
	}
}

func TestLocation(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u@127.0.0.1:5442/shop":                    "127.0.0.1:5442/shop",
		"postgres://u:pw@127.0.0.1:5442/shop?sslmode=require": "127.0.0.1:5442/shop",
		"postgresql://u@DB.example.com/shop":                  "db.example.com:5432/shop",
		"postgres://u@h/shop?host=h1,h2&port=5433":            "h1:5433,h2:5433/shop",
		"postgres://u@[::1]:6000/shop":                        "[::1]:6000/shop",
		"postgres://app@h":                                    "h:5432/app",
		"postgres:///shop?host=/tmp&port=5441":                "/tmp:5441/shop",
		"postgres://u@h/shop?dbname=other":                    "h:5432/other",
	} {
		if got := location(dsn); got != want {
			t.Errorf("location(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// Keys no shard covered cannot have rows, so covering them moves nothing.
func TestDiffRangeCoversMore(t *testing.T) {
	narrow := mustParse(t, edited(t, diffBase, []edit{{"{ to: 100, cluster: pg0 }", "{ from: 0, to: 100, cluster: pg0 }"}}))
	checkLines(t, planLines(Diff(narrow, mustParse(t, diffBase))), []string{
		"applied: shards of group ranged change from 0-100 on pg0, 100- on pg1 to -100 on pg0, 100- on pg1; no key changes database"})
}

// Beyond maxModuloPeriod residues a change of shard count is not listed
// key by key: it is refused unless every shard is one database.
func TestDiffModuloLargePeriod(t *testing.T) {
	mod := func(n int, clusters ...string) string {
		shards := make([]string, n)
		for i := range shards {
			shards[i] = clusters[i%len(clusters)]
		}
		return edited(t, diffBase, []edit{{"shards: [pg0, pg1]", "shards: [" + strings.Join(shards, ", ") + "]"}})
	}
	old := mustParse(t, mod(300, "pg0"))
	checkLines(t, planLines(Diff(old, mustParse(t, mod(301, "pg0")))), []string{
		"applied: shards of group mod change from " + shardList(old.Group("mod")) + " to " + shardList(mustParse(t, mod(301, "pg0")).Group("mod")) + "; no key changes database"})
	checkLines(t, planLines(Diff(old, mustParse(t, mod(301, "pg0", "pg1")))), []string{
		"refused: group mod changes from 300 to 301 modulo shards, which moves keys between clusters" + refuseData})
}

func TestRefusedError(t *testing.T) {
	old := mustParse(t, diffBase)
	plan := Diff(old, mustParse(t, edited(t, diffBase, []edit{{"shards: [pg0, pg1]", "shards: [pg1, pg0]"}})))
	want := "topology reload refused: shard 0 of group mod moves from cluster pg0 to pg1" + refuseData +
		"; shard 1 of group mod moves from cluster pg1 to pg0" + refuseData
	if err := plan.Err(); err == nil || err.Error() != want {
		t.Fatalf("Err() = %v\nwant %s", err, want)
	}
}

// A cluster no group with data uses may change its user: nothing reads
// through it yet.
func TestDiffViewOfUnusedCluster(t *testing.T) {
	withSpare := edited(t, diffBase, []edit{{"clusters:\n", "clusters:\n  pg2: { dsn: \"postgres://postgres@h2/shop\" }\n"}})
	old := mustParse(t, withSpare)
	new := mustParse(t, edited(t, withSpare, []edit{{"postgres://postgres@h2/shop", "postgres://app@h2/shop?options=-cwork_mem%3D1MB"}}))
	checkLines(t, planLines(Diff(old, new)), []string{"applied: cluster pg2: dsn changes, same database h2:5432/shop"})
}

package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shardgate/shardgate/admin"
	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/internal/proxytest"
)

// No password leaves the proxy: after a session that logs in, fails a
// login, runs statements, an error and EXPLAIN, and an admin who reads
// every SHOW, neither the logs, the console's answers, the client's
// answers nor /metrics hold a user's or a DSN's password, whether the DSN
// gives it as user:password@ or as ?password=.
func TestNoPasswordInLogsConsoleMetricsOrErrors(t *testing.T) {
	const marker = "hunter2"
	var logs syncBuffer
	yaml := shopTopology("")
	pg0, pg1 := env.Clusters[0].DSN("shop"), env.Clusters[1].DSN("shop")
	yaml = strings.Replace(yaml, pg0, pg0+"&password="+marker+"pg0", 1)
	yaml = strings.Replace(yaml, pg1, strings.Replace(pg1, "postgres@", "postgres:"+marker+"pg1@", 1), 1)
	p := startProxy(t, yaml, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		c.AuthMethod = auth.SCRAM
		// The DSNs' user owns the test's tables; who runs the statements
		// is not what this test is about (identity_test.go).
		c.Identity = IdentityService
		c.Users = []auth.User{{Name: "app", Password: marker + "app"}, {Name: "boss", Password: marker + "boss", Admin: true}}
	})
	ctx := context.Background()
	var answers strings.Builder
	withPassword := func(user, db string) string {
		return fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", user, marker+user, p.addr, db)
	}
	// A wrong password, then the right one.
	if _, err := pgx.Connect(ctx, fmt.Sprintf("postgres://app:%swrong@%s/shop?sslmode=disable", marker, p.addr)); err == nil {
		t.Fatal("a wrong password was accepted")
	} else {
		answers.WriteString(err.Error() + "\n")
	}
	c := proxytest.Connect(t, withPassword("app", "shop"))
	mustExec(t, c, "DROP TABLE IF EXISTS customers")
	mustExec(t, c, "CREATE TABLE customers (id bigint PRIMARY KEY, name text)")
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES (1, 'a'), (2, 'b')")
	for _, sql := range []string{"EXPLAIN (ROUTE) SELECT * FROM customers WHERE id = 1", "SELECT * FROM customers", "SELECT nosuchcolumn FROM customers", "SHOW search_path"} {
		rows, err := c.Query(ctx, sql)
		if err == nil {
			for rows.Next() {
				fmt.Fprintln(&answers, rows.RawValues())
			}
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			answers.WriteString(err.Error() + "\n")
		}
	}
	boss := proxytest.Connect(t, withPassword("boss", admin.Database))
	for _, show := range []string{"CONFIG", "CLUSTERS", "POOLS", "SERVERS", "CLIENTS", "TOPOLOGY", "SHARDS", "STATS"} {
		_, rows := showRows(t, boss, "SHOW "+show)
		fmt.Fprintln(&answers, show, rows)
	}
	if _, rows := showRows(t, boss, "SHOW CLUSTERS"); len(rows) != 2 || !strings.Contains(rows[0][1], "password=xxxxx") || !strings.Contains(rows[1][1], "postgres:xxxxx@") {
		t.Errorf("SHOW CLUSTERS does not mask both passwords: %v", rows)
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(p.srv.Metrics().Gatherer(), promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	metrics, _ := io.ReadAll(rec.Body)
	for what, text := range map[string]string{"logs": logs.String(), "answers": answers.String(), "metrics": string(metrics)} {
		if i := strings.Index(text, marker); i >= 0 {
			t.Errorf("a password is in the %s: ...%s...", what, text[max(0, i-200):min(len(text), i+50)])
		}
	}
	if !strings.Contains(logs.String(), "password authentication failed") {
		t.Error("the failed login is not logged")
	}
}

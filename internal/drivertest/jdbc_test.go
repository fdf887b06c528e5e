package drivertest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/proxytest"
)

// pgjdbcJar is where Debian's libpostgresql-jdbc-java installs pgjdbc.
const pgjdbcJar = "/usr/share/java/postgresql.jar"

// TestJDBC runs pgjdbc through the proxy (testdata/JdbcCheck.java, one
// step a run): setFetchSize over a 100 k-row ORDER BY scatter and over an
// unordered one, server-prepared statements past prepareThreshold, batch
// inserts with reWriteBatchedInserts, ordinary queries and updates.
func TestJDBC(t *testing.T) {
	javac, errc := exec.LookPath("javac")
	java, errj := exec.LookPath("java")
	_, errjar := os.Stat(pgjdbcJar)
	need(t, errc == nil && errj == nil && errjar == nil, "a JDK with pgjdbc ("+pgjdbcJar+")",
		"Debian: apt-get install openjdk-17-jdk-headless libpostgresql-jdbc-java")
	classes := t.TempDir()
	runScript(t, javac, "-d", classes, "-cp", pgjdbcJar, "testdata/JdbcCheck.java")

	addr := proxyAddr(t)
	c := proxytest.Connect(t, proxytest.DSN(addr, "app", database))
	const n = 100000
	load(t, c, n)

	var all int64
	for i := 1; i <= 12000; i++ {
		all += cents(i)
	}
	zero := 0
	for i := 1; i <= n; i++ {
		if cents(i) == 0 {
			zero++
		}
	}
	runSteps(t, []string{java, "-cp", strings.Join([]string{classes, pgjdbcJar}, ":"), "JdbcCheck", addr, fmt.Sprint(n)}, []step{
		{"fetch_ordered", fmt.Sprintf("rows=%d", n)},
		{"fetch_unordered", fmt.Sprintf("rows=%d", n)},
		{"prepared", fmt.Sprintf("updated=12 read=12 last=12000/%s groups=0:6:10 days,1:6:10 days server_prepared=true", money(all))},
		{"batch", "batched=500 count=500 sum=125375.00 customers=50 deleted=500"},
		{"plain", fmt.Sprintf("%s point=1 updated=%d,%d rolled_back=%d zero=%d", loaded(n), n/50, n/50, n, zero)},
	})
}

package drivertest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/proxytest"
)

// python returns a python3 that imports module: the one on PATH, or
// Debian's /usr/bin/python3 (where python3-psycopg2 and python3-psycopg
// install them); without one the test is skipped (need).
func python(t *testing.T, module, debian string) string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import "+module).Run() == nil {
			return path
		}
	}
	need(t, false, "a python3 with "+module, "Debian: apt-get install "+debian)
	return ""
}

// TestPsycopg2 runs psycopg2's named cursors, ordinary cursor, executemany
// and copy_expert through the proxy (testdata/psycopg2_check.py).
func TestPsycopg2(t *testing.T) {
	py := python(t, "psycopg2", "python3-psycopg2")
	dsn := startProxy(t)
	c := proxytest.Connect(t, dsn)
	const n = 20000
	load(t, c, n)

	desc := 0
	for i := 1; i <= n; i++ {
		if i%997 >= 50 {
			desc++
		}
	}
	out := runScript(t, py, "testdata/psycopg2_check.py", dsn, fmt.Sprint(n))
	want := []string{
		fmt.Sprintf("named rows=%d", n),
		fmt.Sprintf("named_desc rows=%d", desc),
		"withhold rows=1000",
		"scroll first=1,10 after_back=6 absolute=1",
		"plain " + loaded(n) + " point=1",
		"executemany count=100 sum=5075.00",
		"copy rows=300",
	}
	if out != strings.Join(want, "\n") {
		t.Fatalf("psycopg2_check.py printed:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
	var count int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM orders").Scan(&count); err != nil || count != n+300 {
		t.Fatalf("orders after the script: %d rows, %v; want %d", count, err, n+300)
	}
}

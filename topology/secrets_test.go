package topology

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://app:s3cret@h/db":                          "postgres://app:xxxxx@h/db",
		"postgres://app@h/db?password=s3cret&sslmode=require": "postgres://app@h/db?password=xxxxx&sslmode=require",
		"postgres://h/db?sslpassword=k3y&sslkey=/k":           "postgres://h/db?sslkey=%2Fk&sslpassword=xxxxx",
		"postgres://app@h/db?sslmode=disable":                 "postgres://app@h/db?sslmode=disable",
		"postgres://a:b@h/db?password=c":                      "postgres://a:xxxxx@h/db?password=xxxxx",
	} {
		if got := RedactDSN(in); got != want {
			t.Errorf("RedactDSN(%s) = %s, want %s", in, got, want)
		}
	}
}

// secretsTopology has a cluster and users whose passwords come from the
// environment and from files.
const secretsTopology = `version: 1
clusters:
  pg0: { dsn: "postgres://svc:${SG_TEST_DSN_PW}@127.0.0.1:5432/shop" }
  pg1: { dsn: "postgres://svc@127.0.0.1:5433/shop", password_file: pg1.pw }
groups:
  main: { unsharded: true, cluster: pg0 }
  g: { index: { column: id, type: bigint, function: xxhash }, shards: { "-": pg1 }, tables: { t: {} } }
proxy:
  auth:
    method: scram-sha-256
    users:
      app: { password: "${SG_TEST_APP_PW}" }
      ops: { password_file: ops.pw, admin: true }
`

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func TestSecretsFromEnvAndFiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SG_TEST_DSN_PW", "p@ss/w:rd")
	t.Setenv("SG_TEST_APP_PW", "app-secret")
	writeFile(t, filepath.Join(dir, "pg1.pw"), "pg1-secret\n", 0o600)
	writeFile(t, filepath.Join(dir, "ops.pw"), "ops-secret\n", 0o600)
	file := filepath.Join(dir, "topology.yaml")
	writeFile(t, file, secretsTopology, 0o644)
	topo, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Warnings) != 0 {
		t.Errorf("no password is in the file, yet: %v", topo.Warnings)
	}
	if got := topo.Cluster("pg0").DSN; got != "postgres://svc:p%40ss%2Fw%3Ard@127.0.0.1:5432/shop" {
		t.Errorf("pg0 dsn = %s", got)
	}
	if got := topo.Cluster("pg1").DSN; got != "postgres://svc:pg1-secret@127.0.0.1:5433/shop" {
		t.Errorf("pg1 dsn = %s", got)
	}
	if u := topo.Proxy.Auth.User("app"); u.Password != "app-secret" {
		t.Errorf("app password = %q", u.Password)
	}
	if u := topo.Proxy.Auth.User("ops"); u.Password != "ops-secret" || !u.Admin {
		t.Errorf("ops = %+v", u)
	}

	// Problems, each at its position.
	bad := strings.NewReplacer("${SG_TEST_APP_PW}", "${SG_TEST_UNSET}", "password_file: ops.pw", "password: x, password_file: ops.pw",
		"password_file: pg1.pw", "password_file: missing.pw").Replace(secretsTopology)
	_, err = Parse(file, []byte(bad))
	for _, want := range []string{
		`topology.yaml:4:68: cluster "pg1": password_file: open ` + filepath.Join(dir, "missing.pw") + `: no such file or directory`,
		`topology.yaml:12:24: user "app" password: environment variable SG_TEST_UNSET is not set`,
		`topology.yaml:13:27: user "ops": give password or password_file, not both`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// A file that holds a password itself and that others may read gets a
// warning; one readable by its owner only, or whose passwords come from
// elsewhere, does not.
func TestSecretsReadableFileWarning(t *testing.T) {
	dir := t.TempDir()
	clear := strings.Replace(secretsTopology, `"${SG_TEST_APP_PW}"`, `"app-secret"`, 1)
	t.Setenv("SG_TEST_DSN_PW", "x")
	t.Setenv("SG_TEST_APP_PW", "x")
	writeFile(t, filepath.Join(dir, "pg1.pw"), "x", 0o600)
	writeFile(t, filepath.Join(dir, "ops.pw"), "x", 0o600)
	for _, tc := range []struct {
		yaml string
		mode os.FileMode
		warn bool
	}{
		{clear, 0o644, true},
		{clear, 0o640, true},
		{clear, 0o600, false},
		{secretsTopology, 0o644, false},
		{strings.Replace(secretsTopology, "${SG_TEST_DSN_PW}", "dsn-secret", 1), 0o604, true},
		{strings.Replace(secretsTopology, "127.0.0.1:5432/shop", "127.0.0.1:5432/shop?password=clear&application_name=${SG_TEST_APP_PW}", 1), 0o644, true},
	} {
		file := filepath.Join(dir, "topology.yaml")
		writeFile(t, file, tc.yaml, tc.mode)
		topo, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		warned := false
		for _, w := range topo.Warnings {
			warned = warned || strings.Contains(w.Message, "holds a password in the clear and is readable by others")
		}
		if warned != tc.warn {
			t.Errorf("mode %04o: warned %t, want %t (%v)", tc.mode, warned, tc.warn, topo.Warnings)
		}
	}
}

func TestBackendTLSParameters(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ca.crt"), "x", 0o644)
	file := filepath.Join(dir, "topology.yaml")
	yaml := `version: 1
clusters:
  pg0: { dsn: "postgres://svc@db.example:5432/shop?sslmode=verify-full&sslrootcert=ca.crt" }
groups:
  main: { unsharded: true, cluster: pg0 }
`
	topo, err := Parse(file, []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := topo.Cluster("pg0").DSN, "postgres://svc@db.example:5432/shop?sslmode=verify-full&sslrootcert="+strings.ReplaceAll(filepath.Join(dir, "ca.crt"), "/", "%2F"); got != want {
		t.Errorf("dsn = %s, want %s", got, want)
	}
	_, err = Parse(file, []byte(strings.NewReplacer("verify-full", "verify_full", "sslrootcert=ca.crt", "sslrootcert=none.crt&sslcert=c.crt").Replace(yaml)))
	for _, want := range []string{
		`sslmode "verify_full" is not one of disable, allow, prefer, require, verify-ca, verify-full`,
		`sslrootcert: stat ` + filepath.Join(dir, "none.crt") + `: no such file or directory`,
		`sslcert and sslkey go together`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

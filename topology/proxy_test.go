package topology

import (
	"slices"
	"strings"
	"testing"
)

const proxyHeader = `version: 1
clusters: { pg0: { dsn: "postgres://h/db" } }
groups: { main: { unsharded: true, cluster: pg0 } }
proxy:
`

func TestProxyRules(t *testing.T) {
	tests := []struct {
		name string
		yaml string // appended to proxyHeader; its lines start at 5
		want []string
	}{
		{"listen", "  listen: localhost\n", []string{
			`5:11: listen must be host:port, such as 127.0.0.1:6432 ("localhost": address localhost: missing port in address)`}},
		{"listen port", "  listen: ':70000'\n", []string{
			`5:11: listen must be host:port, such as 127.0.0.1:6432 (":70000": port 70000 out of range)`}},
		{"auth method", "  auth: { method: password }\n", []string{
			`5:19: unknown auth method "password" (expected trust, md5 or scram-sha-256)`}},
		{"auth without users", "  auth: { method: md5 }\n", []string{
			`5:3: auth method md5 needs at least one user under users:`}},
		{"md5 hash with scram", "  auth:\n    method: scram-sha-256\n    users:\n      bob: { password: md5b5b8c3c1a8fcb2d9a9a1b5d7d5b1e1f0 }\n", []string{
			`8:24: user "bob" has an md5 password hash, which scram-sha-256 authentication cannot use (store the plain-text password or a SCRAM verifier)`}},
		{"bad scram", "  auth:\n    method: scram-sha-256\n    users:\n      bob: { password: 'SCRAM-SHA-256$4096:salt' }\n      amy: {}\n", []string{
			`8:24: password of user "bob" looks like a SCRAM verifier but is malformed (expected SCRAM-SHA-256$iterations:salt$storedkey:serverkey)`,
			`9:7: user "amy" needs password: or password_file:`}},
		{"tls", "  tls: { cert: a.pem }\n", []string{`5:8: tls needs key:`}},
		{"log", "  log: { slow_statement: fast, verbose: true }\n", []string{
			`5:26: slow_statement: invalid duration "fast" (use a number with a unit, such as 5s, 500ms or 1m)`,
			`5:32: unknown key "verbose" in log (expected slow_statement, sample_statements)`}},
		{"sample statements", "  log: { sample_statements: 2 }\n  query_stats: { max: -1 }\n", []string{
			`5:29: sample_statements must be a number from 0 to 1, not 2`,
			`6:23: max: the number of fingerprints must be between 0 (off) and 1000000`}},
		{"admin", "  auth:\n    users:\n      bob: { password: x, admin: please }\n", []string{`7:34: admin must be true or false, not "please"`}},
		{"pool", "  pool: { mode: statement, size: 0, max_wait: 5, idle_timeout: -1s }\n", []string{
			`5:17: unknown pool mode "statement" (expected transaction or session)`,
			`5:34: pool size must be a positive number of connections, not 0`,
			`5:47: max_wait: invalid duration "5" (use a number with a unit, such as 5s, 500ms or 1m)`,
			`5:64: idle_timeout: duration must not be negative`}},
		{"timeouts", "  timeouts: { connect: soon, qeury: 1s }\n", []string{
			`5:24: connect: invalid duration "soon" (use a number with a unit, such as 5s, 500ms or 1m)`,
			`5:30: unknown key "qeury" in timeouts (did you mean "query"?)`}},
		{"database", "  database: ''\n", []string{
			`5:13: database must not be empty`}},
		{"auth timeout", "  timeouts: { auth: 0s }\n", []string{
			`5:21: auth: the start-up and authentication timeout must be positive`}},
		{"commit", "  commit: 2pc\n", []string{`5:11: unknown commit "2pc" (expected two_phase or best_effort)`}},
		{"limits", "  limits: { max_clients: 0, max_buffered_bytes: 2048, startup_timeout: 0s, startup_bytes: x }\n", []string{
			`5:26: max_clients: must be between 1 and 16777216, not 0`,
			`5:49: max_buffered_bytes: must be between 1048576 and 1125899906842624, not 2048`,
			`5:72: startup_timeout: must be positive`,
			`5:91: startup_bytes must be an integer, not "x"`}},
		{"message over buffered", "  limits: { max_buffered_bytes: 1048576, max_message_bytes: 2097152 }\n", []string{
			`5:61: max_message_bytes (2097152) is more than max_buffered_bytes (1048576): no such message could ever be read`}},
		{"tls required", "  tls: { cert: a.pem, key: b.pem, required: yes please }\n", []string{`5:45: required must be true or false, not "yes please"`}},
		{"unknown key", "  listn: ':1'\n", []string{`5:3: unknown key "listn" in proxy (did you mean "listen"?)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, proxyHeader+tc.yaml, tc.want)
		})
	}
}

func TestPasswordKinds(t *testing.T) {
	md5 := "md5" + strings.Repeat("a1", 16)
	scram := "SCRAM-SHA-256$4096:c2FsdA==$" + strings.Repeat("A", 43) + "=:" + strings.Repeat("A", 43) + "="
	tests := []struct {
		password string
		want     PasswordKind
	}{
		{"secret", PasswordPlain},
		{md5, PasswordMD5},
		{md5[:34], PasswordPlain},
		{scram, PasswordSCRAM},
		{strings.Replace(scram, "4096", "0", 1), PasswordPlain},
		{"SCRAM-SHA-256$x", PasswordPlain},
	}
	for _, tc := range tests {
		if got := (&User{Password: tc.password}).PasswordKind(); got != tc.want {
			t.Errorf("PasswordKind(%q) = %d, want %d", tc.password, got, tc.want)
		}
	}
}

func TestWarnings(t *testing.T) {
	src := `version: 1
clusters:
  pg0: { dsn: "postgres://h/db" }
  spare: { dsn: "postgres://h2/db" }
groups:
  main: { unsharded: true, cluster: pg0 }
  t:
    index: { column: tenant_id, type: bigint, function: modulo }
    shards: [pg0]
proxy:
  auth: { method: md5, users: { bob: { password: md5nothex } } }
`
	topo, err := Parse("w.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range topo.Warnings {
		got = append(got, w.String())
	}
	want := []string{
		`w.yaml:4:3: warning: cluster "spare" is not used by any group`,
		`w.yaml:8:57: warning: function modulo: changing the number of shards moves nearly every row`,
		`w.yaml:11:50: warning: password of user "bob" starts with "md5" but is not an md5 hash (md5 and 32 hex digits); it is used as a plain-text password`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// With an error as well, the warnings travel in the ValidationError.
	_, err = Parse("w.yaml", []byte(strings.Replace(src, "version: 1", "version: 3", 1)))
	ve := err.(*ValidationError)
	if len(ve.Diagnostics) != 4 || len(ve.Errors()) != 1 || !strings.Contains(ve.Error(), "warning: cluster \"spare\"") {
		t.Errorf("diagnostics = %v", ve.Diagnostics)
	}
}

func TestQualifiedNames(t *testing.T) {
	tests := []struct {
		in   string
		want QualifiedName
		str  string
		err  bool
	}{
		{"orders", QualifiedName{"public", "orders"}, "public.orders", false},
		{"Orders", QualifiedName{"public", "orders"}, "public.orders", false},
		{"Sales.Orders", QualifiedName{"sales", "orders"}, "sales.orders", false},
		{`"Orders"`, QualifiedName{"public", "Orders"}, `public."Orders"`, false},
		{`"My ""Odd"" Schema".t`, QualifiedName{`My "Odd" Schema`, "t"}, `"My ""Odd"" Schema".t`, false},
		{"ÜBER", QualifiedName{"public", "Über"}, `public."Über"`, false},
		{"user", QualifiedName{"public", "user"}, `public."user"`, false},
		{"a.b.c", QualifiedName{}, "", true},
		{"", QualifiedName{}, "", true},
		{"1abc", QualifiedName{}, "", true},
		{`"open`, QualifiedName{}, "", true},
		{`""`, QualifiedName{}, "", true},
		{`"a"b`, QualifiedName{}, "", true},
		{"a.", QualifiedName{}, "", true},
	}
	for _, tc := range tests {
		got, err := ParseQualifiedName(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseQualifiedName(%q) = %v, %v", tc.in, got, err)
			continue
		}
		if !tc.err && got.String() != tc.str {
			t.Errorf("%q.String() = %s, want %s", tc.in, got.String(), tc.str)
		}
	}
}

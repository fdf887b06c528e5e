package compose

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"gopkg.in/yaml.v3"

	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// root is the repository's top directory, where docker-compose.yml lives.
const root = "../.."

type service struct {
	Image       string            `yaml:"image"`
	Build       *build            `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   yaml.Node         `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

type build struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

type composeFile struct {
	Services map[string]*service `yaml:"services"`
	Volumes  map[string]any      `yaml:"volumes"`
}

func loadCompose(t *testing.T) *composeFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	if len(cf.Services) == 0 {
		t.Fatal("docker-compose.yml has no services")
	}
	return &cf
}

// flag returns the value of --name in a command ("--name", "v" or
// "--name=v"), "" when absent.
func flag(cmd []string, name string) string {
	for i, a := range cmd {
		if a == name && i+1 < len(cmd) {
			return cmd[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// mount is one bind mount or named volume of a service.
type mount struct{ source, target string }

func (s *service) mounts() []mount {
	var out []mount
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			out = append(out, mount{parts[0], parts[1]})
		}
	}
	return out
}

// source returns the host file mounted at target, "" when none is.
func (s *service) source(target string) string {
	for _, m := range s.mounts() {
		if m.target == target {
			return m.source
		}
	}
	return ""
}

// containerPorts maps each published container port to its host port.
func (s *service) containerPorts(t *testing.T, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range s.Ports {
		parts := strings.Split(p, ":")
		if len(parts) < 2 {
			t.Errorf("%s: port %q: want [ip:]host:container", name, p)
			continue
		}
		out[parts[len(parts)-1]] = parts[len(parts)-2]
	}
	return out
}

// dependsOn reads depends_on in either form: a list (condition
// service_started) or a mapping of conditions.
func (s *service) dependsOn() map[string]string {
	out := map[string]string{}
	n := &s.DependsOn
	switch n.Kind {
	case yaml.SequenceNode:
		for _, it := range n.Content {
			out[it.Value] = "service_started"
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			var c struct{ Condition string }
			_ = n.Content[i+1].Decode(&c)
			out[n.Content[i].Value] = c.Condition
		}
	}
	return out
}

// postgresServices are the services running the postgres image.
func (cf *composeFile) postgresServices() []string {
	var out []string
	for name, s := range cf.Services {
		if strings.HasPrefix(s.Image, "postgres:") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// TestFilesExist: every file and directory docker-compose.yml mounts or
// builds from exists; named volumes are declared; host ports are unique.
func TestFilesExist(t *testing.T) {
	cf := loadCompose(t)
	hostPorts := map[string]string{}
	for name, s := range cf.Services {
		for _, m := range s.mounts() {
			if strings.HasPrefix(m.source, ".") || strings.HasPrefix(m.source, "/") {
				if _, err := os.Stat(filepath.Join(root, m.source)); err != nil {
					t.Errorf("%s mounts %s: %v", name, m.source, err)
				}
			} else if _, ok := cf.Volumes[m.source]; !ok {
				t.Errorf("%s mounts volume %q, which volumes: does not declare", name, m.source)
			}
		}
		if b := s.Build; b != nil {
			if _, err := os.Stat(filepath.Join(root, b.Context, b.Dockerfile)); err != nil {
				t.Errorf("%s builds from %s: %v", name, filepath.Join(b.Context, b.Dockerfile), err)
			}
		}
		for _, host := range s.containerPorts(t, name) {
			if other, dup := hostPorts[host]; dup {
				t.Errorf("host port %s is published by %s and %s", host, other, name)
			}
			hostPorts[host] = name
		}
		for dep := range s.dependsOn() {
			if cf.Services[dep] == nil {
				t.Errorf("%s depends on %q, which is not a service", name, dep)
			}
		}
	}
}

// TestPostgresServices: three Postgres 15 or newer services with logical
// WAL, prepared transactions and a health check.
func TestPostgresServices(t *testing.T) {
	cf := loadCompose(t)
	pgs := cf.postgresServices()
	if len(pgs) != 3 {
		t.Fatalf("postgres services %v, want 3", pgs)
	}
	for _, name := range pgs {
		s := cf.Services[name]
		major, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(s.Image, "postgres:"), ".", 2)[0])
		if err != nil || major < 15 {
			t.Errorf("%s: image %s, want postgres:15 or newer", name, s.Image)
		}
		settings := map[string]string{}
		for i, a := range s.Command {
			if a == "-c" && i+1 < len(s.Command) {
				k, v, _ := strings.Cut(s.Command[i+1], "=")
				settings[k] = v
			}
		}
		if settings["wal_level"] != "logical" {
			t.Errorf("%s: wal_level %q, want logical", name, settings["wal_level"])
		}
		if n, _ := strconv.Atoi(settings["max_prepared_transactions"]); n <= 0 {
			t.Errorf("%s: max_prepared_transactions %q, want > 0 (two-phase commit)", name, settings["max_prepared_transactions"])
		}
		if s.Healthcheck == nil || !slices.Contains(s.Healthcheck.Test, "pg_isready") {
			t.Errorf("%s: no pg_isready health check (the loader waits for it)", name)
		}
		if s.containerPorts(t, name)["5432"] == "" {
			t.Errorf("%s does not publish 5432", name)
		}
	}
}

// TestTopologyAndDSNs: the loader and the proxy mount the same topology,
// which validates, names every Postgres service with its port, database,
// user and password, and lays the example out as
// examples/ecommerce/topology.yaml does; the proxy listens on 6432 and
// publishes it; the loader runs first, after every cluster is healthy.
func TestTopologyAndDSNs(t *testing.T) {
	cf := loadCompose(t)
	proxy, loader := cf.Services["shardgate"], cf.Services["loader"]
	if proxy == nil || loader == nil {
		t.Fatal("services shardgate and loader are required")
	}
	if proxy.Command[0] != "serve" || !slices.Equal(loader.Command[:2], []string{"demo", "load"}) {
		t.Fatalf("commands: shardgate %v, loader %v; want serve and demo load", proxy.Command, loader.Command)
	}
	target := flag(proxy.Command, "--topology")
	if target == "" || flag(loader.Command, "--topology") != target {
		t.Fatalf("--topology: shardgate %q, loader %q; want the same file", target, flag(loader.Command, "--topology"))
	}
	src := proxy.source(target)
	if src == "" || loader.source(target) != src {
		t.Fatalf("%s: shardgate mounts %q there, loader %q; want the same file", target, src, loader.source(target))
	}
	topo, err := topology.Load(filepath.Join(root, src))
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	if _, err := vschema.Build(topo); err != nil {
		t.Fatal(err)
	}

	used := map[string]bool{}
	for _, c := range topo.Clusters {
		cfg, err := pgconn.ParseConfig(c.DSN)
		if err != nil {
			t.Errorf("cluster %s: %v", c.Name, err)
			continue
		}
		pg := cf.Services[cfg.Host]
		if pg == nil || !strings.HasPrefix(pg.Image, "postgres:") {
			t.Errorf("cluster %s: host %q is not a postgres service of docker-compose.yml", c.Name, cfg.Host)
			continue
		}
		used[cfg.Host] = true
		if _, ok := pg.containerPorts(t, cfg.Host)[strconv.Itoa(int(cfg.Port))]; !ok {
			t.Errorf("cluster %s: port %d, but %s serves on %v", c.Name, cfg.Port, cfg.Host, pg.Ports)
		}
		env := pg.Environment
		if cfg.Database != env["POSTGRES_DB"] || cfg.User != env["POSTGRES_USER"] || cfg.Password != env["POSTGRES_PASSWORD"] {
			t.Errorf("cluster %s: database %q user %q password %q; %s has %q %q %q", c.Name, cfg.Database, cfg.User, cfg.Password,
				cfg.Host, env["POSTGRES_DB"], env["POSTGRES_USER"], env["POSTGRES_PASSWORD"])
		}
	}
	for _, pg := range cf.postgresServices() {
		if !used[pg] {
			t.Errorf("postgres service %s is in no cluster of the topology", pg)
		}
	}

	listen := flag(proxy.Command, "--listen")
	if listen == "" {
		listen = topo.Proxy.Listen
	}
	_, port, err := net.SplitHostPort(listen)
	if err != nil || port != "6432" || proxy.containerPorts(t, "shardgate")[port] != "6432" {
		t.Errorf("the proxy listens on %q and publishes %v; want 6432 on both sides", listen, proxy.Ports)
	}

	for _, pg := range cf.postgresServices() {
		if c := loader.dependsOn()[pg]; c != "service_healthy" {
			t.Errorf("loader: depends on %s with %q, want service_healthy", pg, c)
		}
	}
	if c := proxy.dependsOn()["loader"]; c != "service_completed_successfully" {
		t.Errorf("shardgate: depends on loader with %q, want service_completed_successfully", c)
	}
	sameLayout(t, topo)
}

// sameLayout checks that topo has the example's groups, tables, reference
// tables, sequences and indexes (the loader's data assumes them).
func sameLayout(t *testing.T, topo *topology.Topology) {
	t.Helper()
	example, err := topology.Load(filepath.Join(root, "examples/ecommerce/topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	describe := func(tp *topology.Topology) string {
		var b strings.Builder
		for _, g := range tp.Groups {
			fmt.Fprintf(&b, "%s unsharded=%v", g.Name, g.Unsharded)
			if g.Index != nil {
				fmt.Fprintf(&b, " index=%s(%s%v)%s", g.Index.Function, g.Index.Column, g.Index.Expression, g.Index.Type)
			}
			for _, tb := range g.Tables {
				fmt.Fprintf(&b, " %s:%s", tb.QualifiedName, tb.Column)
			}
			fmt.Fprintf(&b, " ref=%v seq=%v gsi=%d\n", g.Reference, g.Sequences, len(g.SecondaryIndexes))
		}
		return b.String()
	}
	if got, want := describe(topo), describe(example); got != want {
		t.Errorf("the compose topology's layout differs from the example's:\n%s\nwant\n%s", got, want)
	}
}

// TestMonitoring: Prometheus scrapes the proxy's --metrics address;
// Grafana's data source is the prometheus service and its dashboards
// provider reads a mounted directory.
func TestMonitoring(t *testing.T) {
	cf := loadCompose(t)
	proxy, prom, graf := cf.Services["shardgate"], cf.Services["prometheus"], cf.Services["grafana"]
	if prom == nil || graf == nil {
		t.Fatal("services prometheus and grafana are required")
	}
	metrics := flag(proxy.Command, "--metrics")
	_, mport, err := net.SplitHostPort(metrics)
	if err != nil {
		t.Fatalf("shardgate --metrics %q: %v", metrics, err)
	}
	promFile := prom.source(flag(prom.Command, "--config.file"))
	var pc struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, promFile, &pc)
	var targets []string
	for _, sc := range pc.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	if !slices.Contains(targets, "shardgate:"+mport) {
		t.Errorf("%s scrapes %v, want shardgate:%s", promFile, targets, mport)
	}

	var ds struct {
		Datasources []struct {
			Type, URL string
		} `yaml:"datasources"`
	}
	var dash struct {
		Providers []struct {
			Options struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	for _, m := range graf.mounts() {
		switch {
		case strings.HasPrefix(m.target, "/etc/grafana/provisioning/datasources/"):
			readYAML(t, m.source, &ds)
		case strings.HasPrefix(m.target, "/etc/grafana/provisioning/dashboards/"):
			readYAML(t, m.source, &dash)
		}
	}
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" {
		t.Fatalf("grafana data sources %+v, want one prometheus", ds.Datasources)
	}
	url := regexp.MustCompile(`^http://([^:/]+):(\d+)$`).FindStringSubmatch(ds.Datasources[0].URL)
	if url == nil || cf.Services[url[1]] != prom || prom.containerPorts(t, "prometheus")[url[2]] == "" {
		t.Errorf("grafana data source %q: want the prometheus service on its published port", ds.Datasources[0].URL)
	}
	if len(dash.Providers) != 1 || graf.source(dash.Providers[0].Options.Path) == "" {
		t.Errorf("grafana dashboards provider %+v: its path must be a mounted directory", dash.Providers)
	}
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	if file == "" {
		t.Fatal("no file mounted where expected")
	}
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// TestDockerfile: a golang build stage of go.mod's Go version with cgo
// on and static linking, a run stage that copies the binary from it and
// runs as an unprivileged user, and every file it copies exists.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if goVersion == nil {
		t.Fatal("go.mod has no go directive")
	}
	type stage struct {
		from, name string
		lines      []string
	}
	var stages []*stage
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if strings.EqualFold(f[0], "FROM") {
			st := &stage{from: f[1]}
			if len(f) == 4 && strings.EqualFold(f[2], "AS") {
				st.name = f[3]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("instruction before FROM: %s", line)
		}
		stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, line)
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a run stage", len(stages))
	}
	b, run := stages[0], stages[len(stages)-1]
	img, tag, _ := strings.Cut(b.from, ":")
	if img != "golang" || (tag != string(goVersion[1]) && !strings.HasPrefix(tag, string(goVersion[1])+"-")) {
		t.Errorf("build stage FROM %s, want golang:%s (go.mod)", b.from, goVersion[1])
	}
	var build string
	for _, l := range b.lines {
		f := strings.Fields(l)
		switch strings.ToUpper(f[0]) {
		case "RUN":
			if strings.Contains(l, "go build") {
				build = l
			}
		case "COPY":
			for _, src := range f[1 : len(f)-1] {
				if _, err := os.Stat(filepath.Join(root, src)); err != nil {
					t.Errorf("COPY %s: %v", src, err)
				}
			}
		}
	}
	if !strings.Contains(build, "CGO_ENABLED=1") || !strings.Contains(build, "-static") {
		t.Errorf("go build %q: want CGO_ENABLED=1 (pg_query) and static linking", build)
	}
	user, copied := "", false
	for _, l := range run.lines {
		f := strings.Fields(l)
		switch strings.ToUpper(f[0]) {
		case "USER":
			user = f[1]
		case "COPY":
			copied = copied || strings.Contains(l, "--from="+b.name)
		}
	}
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "root" || uid == "0" {
		t.Errorf("run stage USER %q, want an unprivileged user", user)
	}
	if !copied || b.name == "" {
		t.Errorf("the run stage does not copy the binary from the build stage %q", b.name)
	}
}

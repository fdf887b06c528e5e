package topology

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads and validates the topology file at path. A file with
// problems yields a *ValidationError; an unreadable one the os error.
func Load(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse validates a topology file's contents. filename is used in
// diagnostics and to resolve relative TLS paths. Every problem is reported
// in one *ValidationError; warnings alone do not fail.
func Parse(filename string, data []byte) (*Topology, error) {
	d := &decoder{file: filename}
	for _, l := range strings.Split(string(data), "\n") {
		d.lines = append(d.lines, strings.TrimSuffix(l, "\r"))
	}
	t := &Topology{File: filename}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		d.report(yamlErrorPosition(err), false, "%s", strings.TrimPrefix(yamlErrorMessage(err), "yaml: "))
	} else if len(root.Content) == 0 || isNull(root.Content[0]) {
		d.report(Position{1, 1}, false, "empty topology file (expected version: 1, clusters: and groups:)")
	} else {
		d.topology(root.Content[0], t)
		d.warnReadable(root.Content[0])
	}
	sortDiagnostics(d.diags)
	if d.hasErrors() {
		return nil, &ValidationError{Diagnostics: d.diags}
	}
	t.Warnings = d.diags
	return t, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlErrorPosition digs the line out of a yaml.v3 syntax error, which
// has no column.
func yamlErrorPosition(err error) Position {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Position{n, 1}
	}
	return Position{1, 1}
}

func yamlErrorMessage(err error) string {
	return yamlLine.ReplaceAllString(err.Error(), "")
}

func (d *decoder) topology(n *yaml.Node, t *Topology) {
	fs, ok := d.fields(n, "the topology", "version", "clusters", "groups", "proxy")
	if !ok {
		return
	}
	if f, ok := d.required(fs, n, "version", "the topology"); ok {
		if v, ok := d.integer(f.val, "version"); ok {
			if v != Version {
				d.errorf(f.val, "unsupported version %d (this shardgate reads version %d)", v, Version)
			}
			t.Version = int(v)
		}
	}
	if f, ok := d.required(fs, n, "clusters", "the topology"); ok {
		d.clusters(f, t)
	}
	t.Proxy = defaultProxy()
	if f, ok := fs["proxy"]; ok {
		d.proxy(f.val, &t.Proxy)
	}
	if f, ok := d.required(fs, n, "groups", "the topology"); ok {
		d.groups(f, t)
	}
}

func (d *decoder) clusters(f field, t *Topology) {
	ps, ok := d.pairs(f.val, "clusters")
	if !ok {
		return
	}
	if len(ps) == 0 {
		d.errorf(f.key, "clusters: needs at least one cluster")
	}
	for _, p := range ps {
		c := &Cluster{Name: p.key.Value, Pos: pos(p.key)}
		t.Clusters = append(t.Clusters, c)
		fs, ok := d.fields(p.val, "cluster", "dsn", "password_file", "replicas", "max_lag", "failover_buffer")
		if !ok {
			continue
		}
		what := fmt.Sprintf("cluster %q", c.Name)
		df, ok := d.required(fs, p.key, "dsn", what)
		if !ok {
			continue
		}
		pf, hasPF := fs["password_file"]
		if dsn, ok := d.dsn(df.val, what, pf, hasPF); ok {
			c.DSN = dsn
		}
		if f, ok := fs["replicas"]; ok {
			d.replicas(f, c, pf, hasPF)
		}
		if f, ok := fs["max_lag"]; ok {
			d.maxLag(f, c)
		}
		d.failoverBuffer(fs, c)
	}
}

// dsn reads a DSN (a cluster's or a standby's): environment references
// expanded, checked, with the password of password_file (when hasPF) and
// the backend TLS settings added.
func (d *decoder) dsn(n *yaml.Node, what string, pf field, hasPF bool) (string, bool) {
	dsn, ok := d.str(n, "dsn")
	if !ok {
		return "", false
	}
	d.clearPassword = d.clearPassword || clearInDSN(dsn)
	if dsn, ok = d.expandEnv(n, dsn, what+" dsn", true); !ok {
		return "", false
	}
	if err := checkDSN(dsn); err != nil {
		d.errorf(n, "%v", err)
		return "", false
	}
	if hasPF {
		pw, ok := d.readSecretFile(pf.val, what)
		if !ok {
			return "", false
		}
		var err error
		if dsn, err = withPassword(dsn, pw); err != nil {
			d.errorf(pf.val, "%s: %v", what, err)
			return "", false
		}
	}
	return d.backendTLS(n, what, dsn), true
}

// checkDSN sanity-checks a connection URL without connecting.
func checkDSN(dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil {
		return fmt.Errorf("invalid dsn: %v", stripURLError(err))
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return fmt.Errorf("invalid dsn %q: expected a postgres:// or postgresql:// URL", RedactDSN(dsn))
	}
	if u.Opaque != "" {
		return fmt.Errorf("invalid dsn %q: expected postgres://host:port/database", RedactDSN(dsn))
	}
	for _, hp := range strings.Split(u.Host, ",") {
		if i := strings.LastIndexByte(hp, ':'); i >= 0 && !strings.HasSuffix(hp, "]") {
			if p, err := strconv.Atoi(hp[i+1:]); err != nil || p < 1 || p > 65535 {
				return fmt.Errorf("invalid dsn %q: bad port %q", RedactDSN(dsn), hp[i+1:])
			}
		}
	}
	return nil
}

// stripURLError drops the URL (and any password in it) from a url.Error.
func stripURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// clusterRef checks that a scalar names a defined cluster.
func (d *decoder) clusterRef(n *yaml.Node, t *Topology) (string, bool) {
	name, ok := d.str(n, "cluster")
	if !ok {
		return "", false
	}
	if t.Cluster(name) == nil {
		names := make([]string, len(t.Clusters))
		for i, c := range t.Clusters {
			names[i] = c.Name
		}
		d.errorf(n, "unknown cluster %q (defined: %s)", name, strings.Join(names, ", "))
		return name, false
	}
	return name, true
}

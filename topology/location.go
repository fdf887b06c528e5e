package topology

import (
	"net"
	"net/url"
	"strings"
)

// location is where a cluster's data lives: the hosts, ports and database
// its DSN connects to, as "host:port[,host:port]/database". Two clusters
// with one location are one database; user, password and connection
// options do not change where rows are.
//
// It follows libpq's URI rules far enough to tell databases apart: the
// host and port query parameters override the authority, dbname overrides
// the path, the port defaults to 5432 and the database to the user name.
// Host names are compared as written (lower-cased), so "localhost" and
// "127.0.0.1" are different locations: a false difference refuses a safe
// reload, which a restart then applies, while a false match would be a
// silent wrong answer.
func location(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn // Parse validated it; be conservative anyway
	}
	q := u.Query()
	var hosts, ports []string
	if h := q.Get("host"); h != "" {
		hosts = strings.Split(h, ",")
	} else if u.Host != "" {
		h, p := splitHostPort(u.Host)
		hosts, ports = []string{h}, []string{p}
	}
	if p := q.Get("port"); p != "" {
		ports = strings.Split(p, ",")
	}
	if len(hosts) == 0 {
		hosts = []string{""} // the default Unix socket
	}
	parts := make([]string, len(hosts))
	for i, h := range hosts {
		p := ""
		switch {
		case i < len(ports):
			p = ports[i]
		case len(ports) == 1:
			p = ports[0] // one port for every host
		}
		if p == "" {
			p = "5432"
		}
		parts[i] = net.JoinHostPort(strings.ToLower(h), p)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if v := q.Get("dbname"); v != "" {
		db = v
	}
	if db == "" && u.User != nil {
		db = u.User.Username()
	}
	return strings.Join(parts, ",") + "/" + db
}

// splitHostPort splits a URL authority's host[:port], keeping a bracketed
// IPv6 address whole.
func splitHostPort(hp string) (host, port string) {
	if h, p, err := net.SplitHostPort(hp); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]"), ""
}

// clusterLocation is the location of a cluster of t, or "" when t has no
// such cluster.
func clusterLocation(t *Topology, name string) string {
	if c := t.Cluster(name); c != nil {
		return location(c.DSN)
	}
	return ""
}

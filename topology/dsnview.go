package topology

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// A cluster's DSN decides more than where its rows are (location): the
// user its sessions run as, and every parameter the connection sends the
// server at start-up (options=-csearch_path=shadow, search_path, any other
// GUC), decide what a statement sees there — the same count(*) reads 0
// under another search_path, an UPDATE touches nothing, another user sees
// other rows through row-level security. target_session_attrs decides
// which of several hosts serves. Reloading such an edit is as wrong as
// moving the cluster, so Diff refuses it for a cluster that holds data.
//
// What only changes how the proxy reaches the same server — the password,
// TLS settings, the connect timeout, the application name — is applied.

// connectionParams are DSN query parameters that change how a connection
// is made, not what its statements see. host, port and dbname are the
// location, compared on their own.
var connectionParams = []string{
	"host", "port", "dbname", "password", "passfile", "connect_timeout", "application_name",
	"sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword", "sslnegotiation", "sslsni",
}

// statementView is what a DSN decides about what statements see besides
// its location: "user" and every other query parameter, sorted as
// "key=value".
func statementView(dsn string) []string {
	u, err := url.Parse(dsn)
	if err != nil {
		return []string{dsn} // Parse validated it; compare whole anyway
	}
	var view []string
	q := u.Query()
	user := q.Get("user")
	if user == "" && u.User != nil {
		user = u.User.Username()
	}
	view = append(view, "user="+user)
	for k, vs := range q {
		if k == "user" || slices.Contains(connectionParams, k) {
			continue
		}
		view = append(view, k+"="+strings.Join(vs, ","))
	}
	slices.Sort(view[1:])
	return view
}

// viewChange says how two statement views differ, for messages.
func viewChange(o, n []string) string {
	var parts []string
	value := func(view []string, key string) (string, bool) {
		for _, kv := range view {
			if k, v, _ := strings.Cut(kv, "="); k == key {
				return v, true
			}
		}
		return "", false
	}
	var keys []string
	for _, kv := range append(slices.Clone(o), n...) {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		ov, oset := value(o, k)
		nv, nset := value(n, k)
		switch {
		case oset && nset && ov != nv:
			parts = append(parts, fmt.Sprintf("%s %q becomes %q", k, ov, nv))
		case !oset && nset:
			parts = append(parts, fmt.Sprintf("%s %q added", k, nv))
		case oset && !nset:
			parts = append(parts, fmt.Sprintf("%s %q removed", k, ov))
		}
	}
	return strings.Join(parts, ", ")
}

// clusterHoldsData reports whether a group of t that holds data uses the
// cluster.
func clusterHoldsData(t *Topology, cluster string) bool {
	for _, g := range t.Groups {
		if !holdsData(g) {
			continue
		}
		if g.Cluster == cluster {
			return true
		}
		for _, s := range g.Shards {
			if s.Cluster == cluster {
				return true
			}
		}
	}
	return false
}

const hintView = "statements would run as another user or with other settings, which can hide or divert rows; if that is intended, restart shardgate with the new file"

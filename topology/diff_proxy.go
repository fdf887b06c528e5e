package topology

import "time"

// proxy compares the proxy: sections. Every field of ProxyConfig must be
// classified here (TestDiffCoversProxyConfig fails otherwise): a running
// proxy cannot change its listen address or pool mode, nor turn TLS on or
// off; everything else it can (whether this proxy build applies each one
// live is the proxy's business, see proxy.Server.Reload).
func (d *differ) proxy() {
	o, n := &d.old.Proxy, &d.new.Proxy
	if o.Listen != n.Listen {
		d.add(ChangeRestart, "proxy.listen", "proxy.listen changes from %s to %s", o.Listen, n.Listen)
	}
	if o.Auth.Method != n.Auth.Method {
		d.add(ChangeApplied, "proxy.auth.method", "proxy.auth.method changes from %s to %s", o.Auth.Method, n.Auth.Method)
	}
	for _, u := range n.Auth.Users {
		switch ou := o.Auth.User(u.Name); {
		case ou == nil:
			d.add(ChangeApplied, "proxy.auth.users", "proxy.auth.users: user %s added", u.Name)
		case ou.Password != u.Password:
			d.add(ChangeApplied, "proxy.auth.users", "proxy.auth.users: password of user %s changed", u.Name)
		case ou.Admin != u.Admin:
			d.add(ChangeApplied, "proxy.auth.users", "proxy.auth.users: admin of user %s changes to %t", u.Name, u.Admin)
		case ou.Target != u.Target:
			d.add(ChangeApplied, "proxy.auth.users", "proxy.auth.users: target of user %s changes to %q (new sessions)", u.Name, u.Target)
		case ou.ReadOnlyTransactions != u.ReadOnlyTransactions:
			d.add(ChangeApplied, "proxy.auth.users", "proxy.auth.users: read_only_transactions of user %s changes to %q (new sessions)", u.Name, u.ReadOnlyTransactions)
		}
	}
	for _, u := range o.Auth.Users {
		if n.Auth.User(u.Name) == nil {
			d.add(ChangeApplied, "proxy.auth.users", "proxy.auth.users: user %s removed", u.Name)
		}
	}
	d.identity(o, n)
	if o.Reads.Target != n.Reads.Target {
		d.add(ChangeApplied, "proxy.reads.target", "proxy.reads.target changes from %s to %s (new sessions)", o.Reads.Target, n.Reads.Target)
	}
	if o.Reads.ReadOnlyTransactions != n.Reads.ReadOnlyTransactions {
		d.add(ChangeApplied, "proxy.reads.read_only_transactions", "proxy.reads.read_only_transactions changes from %s to %s (new sessions)", o.Reads.ReadOnlyTransactions, n.Reads.ReadOnlyTransactions)
	}
	switch {
	case o.TLS == nil && n.TLS != nil:
		d.add(ChangeRestart, "proxy.tls", "proxy.tls added: TLS is turned on")
	case o.TLS != nil && n.TLS == nil:
		d.add(ChangeRestart, "proxy.tls", "proxy.tls removed: TLS is turned off")
	case o.TLS != nil:
		if o.TLS.Cert != n.TLS.Cert {
			d.add(ChangeApplied, "proxy.tls.cert", "proxy.tls.cert changes from %s to %s", o.TLS.Cert, n.TLS.Cert)
		}
		if o.TLS.Key != n.TLS.Key {
			d.add(ChangeApplied, "proxy.tls.key", "proxy.tls.key changes from %s to %s", o.TLS.Key, n.TLS.Key)
		}
		if o.TLS.Required != n.TLS.Required {
			d.add(ChangeApplied, "proxy.tls.required", "proxy.tls.required changes from %t to %t", o.TLS.Required, n.TLS.Required)
		}
	}
	if o.Pool.Mode != n.Pool.Mode {
		d.add(ChangeRestart, "proxy.pool.mode", "proxy.pool.mode changes from %s to %s", o.Pool.Mode, n.Pool.Mode)
	}
	if o.Pool.Size != n.Pool.Size {
		d.add(ChangeApplied, "proxy.pool.size", "proxy.pool.size changes from %d to %d", o.Pool.Size, n.Pool.Size)
	}
	d.duration("proxy.pool.max_wait", o.Pool.MaxWait, n.Pool.MaxWait)
	d.duration("proxy.pool.idle_timeout", o.Pool.IdleTimeout, n.Pool.IdleTimeout)
	d.duration("proxy.timeouts.connect", o.Timeouts.Connect, n.Timeouts.Connect)
	d.duration("proxy.timeouts.query", o.Timeouts.Query, n.Timeouts.Query)
	d.duration("proxy.timeouts.auth", o.Timeouts.Auth, n.Timeouts.Auth)
	d.duration("proxy.timeouts.shutdown", o.Timeouts.Shutdown, n.Timeouts.Shutdown)
	d.duration("proxy.log.slow_statement", o.Log.SlowStatement, n.Log.SlowStatement)
	if o.Log.SampleStatements != n.Log.SampleStatements {
		d.add(ChangeApplied, "proxy.log.sample_statements", "proxy.log.sample_statements changes from %g to %g", o.Log.SampleStatements, n.Log.SampleStatements)
	}
	if o.QueryStats != n.QueryStats {
		d.add(ChangeRestart, "proxy.query_stats.max", "proxy.query_stats.max changes from %d to %d", o.QueryStats.Max, n.QueryStats.Max)
	}
	if o.Intermediate != n.Intermediate {
		d.add(ChangeApplied, "proxy.intermediate", "proxy.intermediate changes from %+v to %+v", o.Intermediate, n.Intermediate)
	}
	if o.Limits != n.Limits {
		d.add(ChangeApplied, "proxy.limits", "proxy.limits changes from %+v to %+v", o.Limits, n.Limits)
	}
	if o.Database != n.Database {
		d.add(ChangeApplied, "proxy.database", "proxy.database changes from %q to %q", o.Database, n.Database)
	}
	if o.Commit != n.Commit {
		d.add(ChangeApplied, "proxy.commit", "proxy.commit changes from %s to %s", o.Commit, n.Commit)
	}
}

func (d *differ) duration(key string, o, n time.Duration) {
	if o != n {
		d.add(ChangeApplied, key, "%s changes from %s to %s", key, o, n)
	}
}

// LiveProxyKeys are the settings of the proxy: section that a running
// shardgate changes on reload (ReloadPlan.RestartUnlessLive): logins (for new connections), pool size, max_wait and
// idle timeout (on the existing pools), the connect and query timeouts
// (new leases; new sessions' statement_timeout), the commit protocol (the
// next commit) and the TLS certificate and key (new handshakes). The
// others — listen, pool mode, TLS on or off, the database name and the
// start-up timeout, which are fixed when the listener and sessions are set
// up — are logged as needing a restart rather than claimed applied.
var LiveProxyKeys = map[string]bool{
	"proxy.auth.method":           true,
	"proxy.auth.users":            true,
	"proxy.auth.identity":         true, // new sessions
	"proxy.auth.query":            true, // new logins
	"proxy.pool.user_size":        true,
	"proxy.pool.size":             true,
	"proxy.pool.max_wait":         true,
	"proxy.pool.idle_timeout":     true,
	"proxy.timeouts.connect":      true,
	"proxy.timeouts.query":        true,
	"proxy.commit":                true,
	"proxy.timeouts.shutdown":     true, // read at SIGTERM (ShutdownTimeout)
	"proxy.tls.cert":              true,
	"proxy.tls.key":               true,
	"proxy.log.slow_statement":    true, // read by each statement
	"proxy.log.sample_statements": true, // read by each statement
	"proxy.intermediate":          true, // read by each statement
}

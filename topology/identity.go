package topology

// identity reads proxy.auth.identity and proxy.auth.query; Identity
// defaults to client with md5 and scram-sha-256, service with trust (the
// proxy has no secret of a trusted client to log in as it with).
func (d *decoder) identity(fs map[string]field, a *AuthConfig) {
	a.Identity = IdentityClient
	if a.Method == AuthTrust {
		a.Identity = IdentityService
	}
	if f, ok := fs["identity"]; ok {
		if s, ok := d.oneOf(f.val, "auth identity", IdentityClient, IdentityService); ok {
			a.Identity = s
		}
	}
	if f, ok := fs["query"]; ok {
		a.Query, _ = d.boolean(f.val, "query")
		if a.Query && a.Method == AuthTrust {
			d.errorf(f.val, "query: looking users up needs method md5 or scram-sha-256 (trust has no password to check)")
		}
	}
}

// userSize reads proxy.pool.user_size.
func (d *decoder) userSize(fs map[string]field, p *PoolConfig) {
	if f, ok := fs["user_size"]; ok {
		if v, ok := d.integer(f.val, "user_size"); ok {
			if v < 1 || v > 1<<20 {
				d.errorf(f.val, "user_size must be a positive number of connections, not %d", v)
			} else {
				p.UserSize = int(v)
			}
		}
	}
}

// identity compares proxy.auth.identity, proxy.auth.query, the users'
// server_password and proxy.pool.user_size.
func (d *differ) identity(o, n *ProxyConfig) {
	if o.Auth.Identity != n.Auth.Identity {
		d.add(ChangeApplied, "proxy.auth.identity", "proxy.auth.identity changes from %s to %s (for new sessions)", o.Auth.Identity, n.Auth.Identity)
	}
	if o.Auth.Query != n.Auth.Query {
		d.add(ChangeApplied, "proxy.auth.query", "proxy.auth.query changes from %t to %t", o.Auth.Query, n.Auth.Query)
	}
	for _, u := range n.Auth.Users {
		if ou := o.Auth.User(u.Name); ou != nil && ou.ServerPassword != u.ServerPassword {
			d.add(ChangeApplied, "proxy.auth.users", "proxy.auth.users: server_password of user %s changed", u.Name)
		}
	}
	if o.Pool.UserSize != n.Pool.UserSize {
		d.add(ChangeApplied, "proxy.pool.user_size", "proxy.pool.user_size changes from %d to %d", o.Pool.UserSize, n.Pool.UserSize)
	}
}

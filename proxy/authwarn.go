package proxy

import (
	"log/slog"
	"strings"

	"github.com/shardgate/shardgate/auth"
)

// warnAuth logs, loudly, the logins an Authenticator lets in without a
// password: anyone under trust without users, and the admin users under
// trust, who then open the admin console (RELOAD, PAUSE, KILL) with no
// password. As in pgbouncer, trust means trust, for the console too; the
// warning is logged at start-up, on every reload that keeps it so, and
// each time such a console is opened (serveAdmin).
func warnAuth(log *slog.Logger, a *auth.Authenticator, when string) {
	if a.AcceptsAnyUser() {
		log.Warn("NO CLIENT AUTHENTICATION" + when + ": proxy.auth.method is trust and proxy.auth.users is empty, " +
			"so anyone who can reach the listen address is served as the backend user under any user name; " +
			"list users, or use md5 or scram-sha-256")
	}
	if admins := a.Admins(); a.Method() == auth.Trust && len(admins) > 0 {
		log.Warn("ADMIN CONSOLE WITHOUT PASSWORD"+when+": proxy.auth.method is trust, so the admin users open the admin console "+
			"(RELOAD, PAUSE, KILL) with no password; use md5 or scram-sha-256", "admin_users", strings.Join(admins, ", "))
	}
}

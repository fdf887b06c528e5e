// Package auth runs the server side of Postgres client authentication:
// trust, md5 and SCRAM-SHA-256 (RFC 5802 / RFC 7677, with the SCRAM
// conversation itself done by github.com/xdg-go/scram).
//
// An Authenticator is built once from the configured method and users and
// is safe for concurrent use. Authenticate drives one exchange over a Conn,
// the small transport interface a session implements (send a message and
// flush it; receive the client's next message, decoded as the answer to a
// given authentication request). It returns nil when the client proved who
// it is, and otherwise an error with a SQLSTATE (package sqlerr) for the
// caller to send as a FATAL ErrorResponse.
//
// Behaviour follows Postgres's auth.c and auth-scram.c:
//
//   - trust with a users list refuses a name not in it with 28000
//     (role "x" does not exist); trust without a list accepts any name.
//   - md5 sends AuthenticationMD5Password with a random salt. A user whose
//     stored password is a SCRAM verifier is switched to SCRAM, as Postgres
//     does for an md5 pg_hba line.
//   - SCRAM-SHA-256 is offered without channel binding (no
//     SCRAM-SHA-256-PLUS): a client-first-message with the "p=" flag is
//     refused (08P01); "n" and "y" are accepted, and the c= attribute of
//     the final message must carry exactly that GS2 header. The server
//     nonce extends the client's, the final message must echo it whole, and
//     the proof is compared in constant time.
//   - A user that does not exist (or has no secret the method can use)
//     gets a mock exchange: the same messages, with a salt derived from
//     the user name and a per-Authenticator secret, so it is stable across
//     attempts, and the same 28P01 "password authentication failed" at the
//     end. The messages a client sees do not tell a missing user from a
//     wrong password.
//
// Login is Authenticate that also returns a Proof: what the login leaves
// the proxy to log in to the backends as the same role with. After a SCRAM
// exchange that is the ClientKey, recovered from the client's proof
// (ClientProof XOR HMAC(StoredKey, AuthMessage), RFC 5802 §3) and checked
// against the verifier's StoredKey, with the verifier's salt, iteration
// count and ServerKey: enough for SCRAM pass-through to a backend whose
// verifier has the same salt, without the password. A plain-text password
// from the configuration is handed on as it is.
//
// Config.Lookup finds the secret of a user the configuration does not
// list (pgbouncer's auth_query: the proxy asks pg_authid on main); a user
// it does not find gets the mock exchange.
//
// auth imports nothing of shardgate but sqlerr; it knows nothing of
// sessions, TLS or topologies.
package auth

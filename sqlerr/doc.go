// Package sqlerr is the one error type of shardgate that carries a Postgres
// SQLSTATE, so a decision ("is this a unique violation?", "what code does
// the client get?") is made by code and never by message text.
//
// It is the lowest package of the tree: it imports only the standard
// library, so every layer (keyexpr, vschema, planner, proxy, workflows) can
// create and inspect the same type. It must never import another shardgate
// package.
//
// An *Error is a plain value: create it with New, decorate it with
// WithDetail or WithHint (which return copies), wrap it with fmt.Errorf's %w
// as often as you like, and read the code back with Code, which looks
// through every wrapper.
package sqlerr

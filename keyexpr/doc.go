// Package keyexpr parses and evaluates sharding-index expressions such as
// lower(sku), left(tenant, 4) || '-' || region, or (id)::text.
//
// An expression is parsed once, at topology load, with the real Postgres
// parser (pg_query_go, by parsing "SELECT <expr>") and translated into a
// small tree of its own. Evaluating that tree is pure Go: no cgo, no I/O, no
// allocation beyond the result strings. The proxy evaluates it on literals
// and bound parameters, workflows on copied and replicated rows; both use
// this one implementation, so they can never disagree about where a row
// lives.
//
// Only a closed set of constructs is accepted: column references, string
// and integer literals, NULL, lower, upper, left, right, substr/substring,
// btrim/trim, casts to text, varchar, bigint, integer, smallint and uuid,
// and ||. Anything else is an *UnsupportedError at parse time. An expression
// longer than MaxLength bytes, or nested too deeply for the parser, is
// refused with 54001 before it can crash pg_query.
//
// Semantics follow Postgres, including its corner cases: characters are
// runes, not bytes; left/right take negative counts; substr accepts a start
// at or below zero and refuses a negative length (22011); functions are
// strict (NULL in, NULL out); conversions fail with Postgres's SQLSTATE and
// message (22P02, 22003). Values are typed at run time rather than at parse
// time, because a bound parameter in text format has no type until it is
// used: text is converted to an integer where an integer is needed, and an
// integer to its decimal text where text is needed.
//
// lower and upper use Go's simple Unicode case mapping (one rune to one
// rune). That is what Postgres 17's builtin C.UTF-8 provider does, and what
// ICU and glibc locales do for every character except a few whose full
// mapping changes the length (German ß upper-cases to SS under ICU). Since
// only shardgate computes keys, placement is consistent by construction;
// golden vectors in vschema pin the results.
//
// This package is the lowest layer of the routing stack: it imports
// pg_query_go, sqlerr and the standard library, and must never
// import topology, vschema, the planner or the proxy, nor touch the network.
// An *Expr is immutable after Parse and safe for concurrent use.
package keyexpr

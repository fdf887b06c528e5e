// Package pgcopy reads COPY FROM STDIN data streams the way Postgres does,
// so the proxy can send each row to the cluster of its shard key.
//
// It owns the row scanners of the text, csv and binary formats (Scanner:
// rows cut exactly where copyfromparse.c cuts them, the key fields
// decoded, errors with Postgres's messages and line numbers) and the map
// from a cluster's line numbers back to the client's (LineMap). Rows are
// never re-encoded: the scanner hands back each row's bytes as received.
//
// It is pure code with no I/O. It must never import any other package of
// shardgate (the proxy's COPY executor imports it). The scanner is fuzzed
// (go test ./pgcopy -fuzz FuzzCopyScanner) with its corpus committed.
package pgcopy

// Package pgcopy reads COPY FROM STDIN data streams the way Postgres does,
// so the proxy can send each row to the cluster of its shard key.
//
// It owns the row scanners of the text, csv and binary formats (Scanner:
// rows cut exactly where copyfromparse.c cuts them, the key fields
// decoded, errors with Postgres's messages and line numbers), binary key
// fields as shard index values (KeyValue), the client encodings it can
// read (CheckEncoding), and line numbers in errors: a row's (RowError) and
// a cluster's, mapped back to the client's stream (LineMap, FixLine).
// Rows are never re-encoded: the scanner hands back each row's bytes as
// received.
//
// It is pure code with no I/O. It may import keyexpr and sqlerr; it must
// never import any other package of shardgate (package copyroute, the COPY
// FROM executor, imports it). The scanner is fuzzed (go test ./pgcopy -fuzz
// FuzzCopyScanner) with its corpus committed.
package pgcopy

// Package pgwire is the lowest layer of shardgate's server side: Postgres
// protocol messages as bytes, and errors as the protocol carries them.
//
// It owns:
//
//   - reading backend messages undecoded (Reader, RawMessage), so rows are
//     relayed byte for byte, or whole runs of them still in the read
//     buffer, by their headers alone (Reader.Run, TypeSet), and writing
//     messages (WriteRaw, Encoder);
//   - reading client messages (ClientReader: its buffer comes from a pool
//     and goes back between messages, Release; a message larger than it
//     reserves its own buffer from a Budget shared by every reader, or is
//     refused and can be skipped, Discard) and pooled client writers
//     (GetClientWriter, PutClientWriter);
//   - copying decoded messages whose buffers pgproto3 reuses (MessageCopier,
//     CopyRowDescription) and splitting DataRow bodies (ParseDataRow);
//   - errors: BackendError (a backend's ErrorResponse kept whole, with the
//     cluster and shards it came from), ErrorResponse (any error as the
//     message a client gets), ErrCode, ConnLost, Annotate, PgErrorFrom;
//   - SQL quoting for statements the proxy writes itself (QuoteIdent,
//     QuoteLiteral).
//
// It has no state and does no I/O of its own beyond the reader and writer
// it is given. It may import sqlerr and pgx's pgproto3 and pgconn; it must
// never import any other package of shardgate (every layer above imports
// it).
package pgwire

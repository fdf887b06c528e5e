// Package pgvalue decodes, compares, combines and encodes column values the
// way Postgres does, for the merges that combine several clusters' rows:
// the types merges know (TypeOf), their text and binary wire forms,
// btree ordering (Compare), equality keys for GROUP BY and DISTINCT
// (AppendKey), numeric arithmetic with the backend's scales (Decimal),
// intervals (Interval) and float text as float.c prints it
// (AppendFloat8Text, AppendFloat4Text).
//
// Text that depends on the session's settings (Styles: DateStyle's format
// and field order, IntervalStyle, TimeZone) is read with them
// (DecodeStyled) and intervals are written in every IntervalStyle
// (AppendStyle). A timestamptz printed with a zone abbreviation (every
// DateStyle but ISO) is turned into UTC with the session's zone rules,
// read from the same tz database files Postgres reads (or the fixed
// offset of a numeric zone): the instant whose offset and abbreviation
// give that text. A zone without rules the proxy can read, or an
// abbreviation the rules do not give at that local time, is
// ErrTimeZone, never a guess.
//
// Type OIDs are pgx's pgtype constants. pgtype's codecs are not used for
// the values themselves: they do not give byte-identical results for what
// merges need (numeric's display scale and the infinities' binary form,
// float text under extra_float_digits, dates before Christ and
// infinities, bytea's escape output, interval overflow), so those codecs
// are Postgres's semantics, kept here.
//
// The package has no state but immutable tables and the cache of time
// zone rules by name. It may import sqlerr and
// pgx's pgtype; it must never import any other package of shardgate.
package pgvalue

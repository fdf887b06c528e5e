package pgcopy

import (
	"encoding/binary"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
)

// BinaryKeyType reports whether the scanner's caller can read a shard key
// column of type oid from binary COPY data (KeyValue).
func BinaryKeyType(oid uint32) bool {
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.UUIDOID:
		return true
	}
	return false
}

// KeyValue reads a key field of a binary COPY stream, of type oid (one
// BinaryKeyType accepts), as a value for the shard index.
func KeyValue(oid uint32, v []byte) (keyexpr.Value, error) {
	bad := func() error {
		return sqlerr.New("22P03", "incorrect binary data format")
	}
	switch oid {
	case pgtype.Int8OID:
		if len(v) != 8 {
			return keyexpr.Value{}, bad()
		}
		return keyexpr.Int(int64(binary.BigEndian.Uint64(v))), nil
	case pgtype.Int4OID:
		if len(v) != 4 {
			return keyexpr.Value{}, bad()
		}
		return keyexpr.Int(int64(int32(binary.BigEndian.Uint32(v)))), nil
	case pgtype.Int2OID:
		if len(v) != 2 {
			return keyexpr.Value{}, bad()
		}
		return keyexpr.Int(int64(int16(binary.BigEndian.Uint16(v)))), nil
	case pgtype.UUIDOID:
		if len(v) != 16 {
			return keyexpr.Value{}, bad()
		}
		var u [16]byte
		copy(u[:], v)
		return keyexpr.Text(keyexpr.FormatUUID(u)), nil
	}
	return keyexpr.Text(string(v)), nil
}

// CheckEncoding refuses client encodings the scanner cannot read: those
// whose multi-byte characters may contain ASCII bytes (the delimiter, a
// quote, a backslash), and any encoding but UTF8 and SQL_ASCII when the
// key is text (textKey: its bytes would have to be converted before
// hashing). table names the COPY's table in the hint.
func CheckEncoding(enc string, textKey bool, table string) error {
	norm := strings.ToUpper(strings.NewReplacer("_", "", "-", "").Replace(enc))
	switch norm {
	case "", "UTF8", "UNICODE", "SQLASCII":
		return nil
	case "SJIS", "SHIFTJIS", "MSKANJI", "SHIFTJIS2004", "BIG5", "WIN950", "GBK", "WIN936", "CP936", "UHC", "WIN949", "GB18030", "JOHAB":
		return sqlerr.New(sqlerr.FeatureNotSupported, "sharded COPY in client encoding %s is not supported", enc).
			WithHint("Use client_encoding UTF8 for COPY into %s.", table)
	}
	if textKey {
		return sqlerr.New(sqlerr.FeatureNotSupported, "sharded COPY in client encoding %s is not supported for a text shard key", enc).
			WithHint("Use client_encoding UTF8 for COPY into %s.", table)
	}
	return nil
}

package planner

import (
	"encoding/binary"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
)

// Type OIDs of the binary parameter formats a shard key may arrive in
// (src/include/catalog/pg_type.dat).
const (
	oidName    = 19
	oidInt8    = 20
	oidInt2    = 21
	oidInt4    = 23
	oidText    = 25
	oidUnknown = 705
	oidBpchar  = 1042
	oidVarchar = 1043
	oidUUID    = 2950
)

// paramValue converts parameter $n (1-based) to a key-expression value.
// Text-format values are text, whatever their OID: the index type decides
// how they convert, exactly as the backend's input function would. Binary
// values are decoded by OID (int2, int4, int8, uuid and the text types);
// other binary types cannot be shard keys.
func paramValue(params []Param, n int) (keyexpr.Value, error) {
	if n < 1 || n > len(params) {
		return keyexpr.Value{}, sqlerr.New(sqlerr.ProtocolViolation,
			"bind message supplies %d parameters, but the statement's shard key uses $%d", len(params), n)
	}
	p := params[n-1]
	if p.Null {
		return keyexpr.Null(), nil
	}
	if !p.Binary {
		return keyexpr.Text(string(p.Value)), nil
	}
	v := p.Value
	badLen := func(typ string) error {
		return sqlerr.New(sqlerr.ProtocolViolation,
			"incorrect binary data format in bind parameter %d: %d bytes for type %s", n, len(v), typ)
	}
	switch p.OID {
	case oidInt2:
		if len(v) != 2 {
			return keyexpr.Value{}, badLen("smallint")
		}
		return keyexpr.Int(int64(int16(binary.BigEndian.Uint16(v)))), nil
	case oidInt4:
		if len(v) != 4 {
			return keyexpr.Value{}, badLen("integer")
		}
		return keyexpr.Int(int64(int32(binary.BigEndian.Uint32(v)))), nil
	case oidInt8:
		if len(v) != 8 {
			return keyexpr.Value{}, badLen("bigint")
		}
		return keyexpr.Int(int64(binary.BigEndian.Uint64(v))), nil
	case oidUUID:
		if len(v) != 16 {
			return keyexpr.Value{}, badLen("uuid")
		}
		var u [16]byte
		copy(u[:], v)
		return keyexpr.Text(keyexpr.FormatUUID(u)), nil
	case oidText, oidVarchar, oidBpchar, oidName, oidUnknown:
		return keyexpr.Text(string(v)), nil
	}
	return keyexpr.Value{}, sqlerr.New(sqlerr.FeatureNotSupported,
		"binary parameter $%d of type OID %d cannot be used as a shard key", n, p.OID).
		WithHint("Send the parameter in text format, or as int2, int4, int8, uuid or text.")
}

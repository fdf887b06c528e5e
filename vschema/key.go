package vschema

import (
	"encoding/binary"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"github.com/shardgate/shardgate/keyexpr"
)

// KeyType is the data type of a sharding or secondary index key.
type KeyType uint8

// Key types. Their names are Postgres's.
const (
	Bigint KeyType = iota + 1
	Integer
	Smallint
	Text
	Varchar
	UUID
)

var keyTypeNames = map[KeyType]string{Bigint: "bigint", Integer: "integer", Smallint: "smallint", Text: "text", Varchar: "varchar", UUID: "uuid"}

// String returns the type's SQL name.
func (t KeyType) String() string {
	if s, ok := keyTypeNames[t]; ok {
		return s
	}
	return "keytype(" + strconv.Itoa(int(t)) + ")"
}

// IsInteger reports whether keys of this type are integers.
func (t KeyType) IsInteger() bool { return t == Bigint || t == Integer || t == Smallint }

// bits is the width of an integer type.
func (t KeyType) bits() int {
	switch t {
	case Smallint:
		return 16
	case Integer:
		return 32
	}
	return 64
}

// ParseKeyType maps a topology type name (topology.TypeBigint, ...) to a
// KeyType.
func ParseKeyType(name string) (KeyType, bool) {
	for t, s := range keyTypeNames {
		if s == name {
			return t, true
		}
	}
	return 0, false
}

// keyKind is the class of a key's canonical encoding.
type keyKind uint8

const (
	intKey keyKind = iota + 1
	textKey
	uuidKey
)

// Key is a shard key converted to its index's type: an integer, a text or
// a uuid. The zero Key is invalid. Keys are comparable with ==.
type Key struct {
	kind keyKind
	i    int64
	s    string
	u    [16]byte
}

// IntegerKey returns the key of an integer (smallint, integer or bigint)
// value. The three widths share one canonical encoding, so a key does
// not depend on the column's declared width.
func IntegerKey(v int64) Key { return Key{kind: intKey, i: v} }

// TextKey returns the key of a text or varchar value.
func TextKey(s string) Key { return Key{kind: textKey, s: s} }

// UUIDKey returns the key of a uuid value.
func UUIDKey(u [16]byte) Key { return Key{kind: uuidKey, u: u} }

// Int returns an integer key's value.
func (k Key) Int() (int64, bool) { return k.i, k.kind == intKey }

// Text returns a text key's value.
func (k Key) Text() (string, bool) { return k.s, k.kind == textKey }

// UUID returns a uuid key's 16 bytes.
func (k Key) UUID() ([16]byte, bool) { return k.u, k.kind == uuidKey }

// IsValid reports whether k was made by a constructor or a conversion.
func (k Key) IsValid() bool { return k.kind != 0 }

// String returns the key as a SQL literal, for plans and messages: 42,
// 'abc', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'.
func (k Key) String() string {
	switch k.kind {
	case intKey:
		return strconv.FormatInt(k.i, 10)
	case textKey:
		return keyexpr.Text(k.s).String()
	case uuidKey:
		return "'" + keyexpr.FormatUUID(k.u) + "'"
	}
	return "<invalid key>"
}

// CanonicalBytes returns the bytes a key hashes to, which fix where a row
// lives forever: an integer as the 8-byte big-endian two's complement of
// its int64 value, text as its UTF-8 bytes, a uuid as its 16 bytes. An
// invalid key has no bytes.
func CanonicalBytes(k Key) []byte {
	switch k.kind {
	case intKey:
		return binary.BigEndian.AppendUint64(nil, uint64(k.i))
	case textKey:
		return []byte(k.s)
	case uuidKey:
		return append([]byte(nil), k.u[:]...)
	}
	return nil
}

// KeyspaceID returns the xxhash keyspace id of a key: XXH64 with seed 0
// of its canonical bytes, as 8 big-endian bytes.
func KeyspaceID(k Key) [8]byte {
	var id [8]byte
	var h uint64
	switch k.kind {
	case intKey:
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(k.i))
		h = xxhash.Sum64(b[:])
	case textKey:
		h = xxhash.Sum64String(k.s)
	default:
		h = xxhash.Sum64(CanonicalBytes(k))
	}
	binary.BigEndian.PutUint64(id[:], h)
	return id
}

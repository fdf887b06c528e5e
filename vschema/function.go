package vschema

import (
	"sort"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// Function maps a key to one of its group's shards: the sharding function
// of an index, as in Vitess's vindexes. Implementations are immutable.
//
// The interface is deliberately minimal. Capabilities that only some
// functions have (routing a range predicate, looking a key up in a
// secondary index) belong in separate interfaces that callers test for
// with a type assertion.
type Function interface {
	// Name is the function's name in the topology file: xxhash, range or
	// modulo.
	Name() string
	// Shard returns the position in Group.Shards of the shard that owns
	// key. It fails (SQLSTATE 23514) when no shard does, which only a
	// range function with bounded ends can cause.
	Shard(key Key) (int, error)
}

// xxhashFunction finds the key range holding a key's keyspace id.
type xxhashFunction struct {
	starts [][]byte // start of each shard's range, in keyspace order
}

func (f *xxhashFunction) Name() string { return topology.FunctionXXHash }

func (f *xxhashFunction) Shard(key Key) (int, error) {
	if !key.IsValid() {
		return 0, errInvalidKey
	}
	id := KeyspaceID(key)
	// The ranges cover the keyspace without gaps (topology checks it), so
	// the owner is the last range starting at or before the id.
	i := sort.Search(len(f.starts), func(i int) bool { return topology.CompareKeys(f.starts[i], id[:]) > 0 })
	return i - 1, nil
}

// rangeFunction finds the half-open integer range holding a key.
type rangeFunction struct {
	index    string
	from, to []*int64 // per shard, nil = unbounded; sorted and disjoint
}

func (f *rangeFunction) Name() string { return topology.FunctionRange }

func (f *rangeFunction) Shard(key Key) (int, error) {
	v, ok := key.Int()
	if !ok {
		return 0, errInvalidKey
	}
	// First shard whose upper bound lies above v.
	i := sort.Search(len(f.to), func(i int) bool { return f.to[i] == nil || v < *f.to[i] })
	if i == len(f.to) || (f.from[i] != nil && v < *f.from[i]) {
		return 0, sqlerr.New(sqlerr.CheckViolation, "no shard of index %q covers key %d", f.index, v)
	}
	return i, nil
}

// moduloFunction maps an integer key to key mod n.
type moduloFunction struct {
	n int64
}

func (f *moduloFunction) Name() string { return topology.FunctionModulo }

// Shard returns ((v % n) + n) % n: Go's % keeps the sign of v, and a
// negative key must still land on a shard, so -1 goes to shard n-1 and
// the shards take turns along the whole number line.
func (f *moduloFunction) Shard(key Key) (int, error) {
	v, ok := key.Int()
	if !ok {
		return 0, errInvalidKey
	}
	return int((v%f.n + f.n) % f.n), nil
}

var errInvalidKey = sqlerr.New(sqlerr.InternalError, "shard lookup with a key of the wrong kind")

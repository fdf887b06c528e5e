package topology

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

func (gd *groupDecoder) shards(f field, g *Group) {
	before := len(gd.diags)
	switch g.Index.Function {
	case FunctionXXHash:
		gd.keyRangeShards(f, g)
	case FunctionRange:
		gd.rangeShards(f, g)
	case FunctionModulo:
		gd.moduloShards(f, g)
	default:
		return // the function's own error says enough
	}
	if len(g.Shards) == 0 && len(gd.diags) == before {
		gd.errorf(f.key, "group %q needs at least one shard", g.Name)
	}
}

// keyRangeShards reads the xxhash form: a mapping of hex key ranges to
// clusters that must cover the keyspace exactly.
func (gd *groupDecoder) keyRangeShards(f field, g *Group) {
	n := deref(f.val)
	if n.Kind == yaml.SequenceNode {
		gd.errorf(n, "shards of an xxhash index must be a mapping of key ranges to clusters, such as \"-80\": pg0")
		return
	}
	ps, ok := gd.pairs(n, "shards")
	if !ok {
		return
	}
	var shards []*Shard
	for _, p := range ps {
		s, err := parseKeyRange(p.key.Value)
		if err != nil {
			gd.errorf(p.key, "%v", err)
			continue
		}
		s.Pos = pos(p.key)
		s.Cluster, _ = gd.clusterRef(p.val, gd.t)
		if s.End != nil && CompareKeys(s.Start, s.End) >= 0 {
			gd.errorf(p.key, "key range %q is empty: its start is not below its end", s.Name)
			continue
		}
		shards = append(shards, s)
	}
	slices.SortStableFunc(shards, func(a, b *Shard) int { return CompareKeys(a.Start, b.Start) })
	gd.checkCoverage(shards)
	g.Shards = shards
}

// checkCoverage reports gaps and overlaps between key ranges sorted by
// start. covered is how far the keyspace is covered so far; by is the
// range that reached it.
func (gd *groupDecoder) checkCoverage(shards []*Shard) {
	if len(shards) == 0 {
		return
	}
	var covered []byte
	coveredToEnd := false
	var by *Shard
	for _, s := range shards {
		switch c := CompareKeys(s.Start, covered); {
		case coveredToEnd || c < 0:
			upTo := covered
			if coveredToEnd || (s.End != nil && CompareKeys(s.End, covered) < 0) {
				upTo = s.End
			}
			gd.report(s.Pos, false, "key range %q overlaps %q between %s and %s", s.Name, by.Name, keyText(s.Start, true), keyText(upTo, false))
		case c > 0:
			gd.report(s.Pos, false, "key ranges leave a gap between %s and %s", keyText(covered, true), keyText(s.Start, true))
		}
		if coveredToEnd {
			continue
		}
		if s.End == nil {
			coveredToEnd, by = true, s
		} else if CompareKeys(s.End, covered) > 0 {
			covered, by = s.End, s
		}
	}
	if !coveredToEnd {
		last := shards[len(shards)-1]
		gd.report(last.Pos, false, "key ranges leave a gap between %s and %s", keyText(covered, true), keyText(nil, false))
	}
}

// keyText prints a key-range bound for messages. An empty start is the
// start of the keyspace, a nil end its end.
func keyText(k []byte, start bool) string {
	switch {
	case len(k) == 0 && start:
		return "the start of the keyspace"
	case k == nil:
		return "the end of the keyspace"
	}
	return hex.EncodeToString(k)
}

// parseKeyRange parses a Vitess-style key range: "start-end" in hex, each
// side a whole number of bytes, either side empty for unbounded; "-" alone
// is the whole keyspace.
func parseKeyRange(text string) (*Shard, error) {
	name := strings.ToLower(text)
	lo, hi, ok := strings.Cut(name, "-")
	if !ok || strings.Contains(hi, "-") {
		return nil, fmt.Errorf("invalid key range %q: expected start-end in hex, such as \"-80\", \"80-c0\" or \"c0-\"", text)
	}
	s := &Shard{Name: name}
	for _, b := range []struct {
		text string
		dst  *[]byte
	}{{lo, &s.Start}, {hi, &s.End}} {
		if b.text == "" {
			continue
		}
		if len(b.text)%2 != 0 {
			return nil, fmt.Errorf("invalid key range %q: %q is not a whole number of bytes (use an even number of hex digits)", text, b.text)
		}
		v, err := hex.DecodeString(b.text)
		if err != nil {
			return nil, fmt.Errorf("invalid key range %q: %q is not hex", text, b.text)
		}
		*b.dst = v
	}
	return s, nil
}

// CompareKeys compares key-range bounds and keyspace ids as Vitess does:
// as byte strings padded with zeros, so "80" and "8000" are the same
// point. nil is the start of the keyspace.
func CompareKeys(a, b []byte) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y byte
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return int(x) - int(y)
		}
	}
	return 0
}

// KeyRangeContains reports whether the keyspace id lies in [start, end),
// with nil end meaning the end of the keyspace.
func KeyRangeContains(start, end, id []byte) bool {
	return CompareKeys(start, id) <= 0 && (end == nil || CompareKeys(id, end) < 0)
}

// typeBounds is the value range of an integer key type.
func typeBounds(typ string) (lo, hi int64) {
	switch typ {
	case TypeSmallint:
		return math.MinInt16, math.MaxInt16
	case TypeInteger:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// rangeShards reads the range form: a list of {from, to, cluster},
// half-open, sorted, without gaps or overlaps. The first may omit from and
// the last may omit to.
func (gd *groupDecoder) rangeShards(f field, g *Group) {
	items, ok := gd.list(f.val, "shards of a range index")
	if !ok {
		return
	}
	lo, hi := typeBounds(g.Index.Type)
	for i, it := range items {
		fs, ok := gd.fields(it, "range shard", "from", "to", "cluster")
		if !ok {
			continue
		}
		s := &Shard{Pos: pos(it)}
		if cf, ok := gd.required(fs, it, "cluster", "range shard"); ok {
			s.Cluster, _ = gd.clusterRef(cf.val, gd.t)
		}
		if ff, ok := fs["from"]; ok {
			if v, ok := gd.integer(ff.val, "from"); ok {
				if v < lo || v > hi {
					gd.errorf(ff.val, "from: %d is out of range for type %s", v, g.Index.Type)
				}
				s.From = &v
			}
		} else if i > 0 {
			gd.errorf(it, "only the first range may omit from:")
		}
		if tf, ok := fs["to"]; ok {
			if v, ok := gd.integer(tf.val, "to"); ok {
				if v <= lo || (hi < math.MaxInt64 && v > hi+1) {
					gd.errorf(tf.val, "to: %d is out of range for type %s", v, g.Index.Type)
				}
				s.To = &v
			}
		} else if i < len(items)-1 {
			gd.errorf(it, "only the last range may omit to:")
		}
		s.Name = boundText(s.From) + "-" + boundText(s.To)
		if s.From != nil && s.To != nil && *s.From >= *s.To {
			gd.errorf(it, "range %q is empty: from must be below to", s.Name)
		}
		g.Shards = append(g.Shards, s)
	}
	for i := 1; i < len(g.Shards); i++ {
		prev, s := g.Shards[i-1], g.Shards[i]
		if prev.To == nil || s.From == nil {
			continue // already reported
		}
		switch {
		case prev.From != nil && *s.From < *prev.From:
			gd.report(s.Pos, false, "range %q comes after %q: ranges must be sorted by from", s.Name, prev.Name)
		case *s.From < *prev.To:
			gd.report(s.Pos, false, "range %q overlaps %q between %d and %d", s.Name, prev.Name, *s.From, min(*prev.To, ptrOr(s.To, math.MaxInt64)))
		case *s.From > *prev.To:
			gd.report(s.Pos, false, "ranges leave a gap between %d and %d", *prev.To, *s.From)
		}
	}
}

func boundText(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

func ptrOr(v *int64, def int64) int64 {
	if v == nil {
		return def
	}
	return *v
}

// moduloShards reads the modulo form: a list of clusters, shard i owning
// the keys whose remainder is i.
func (gd *groupDecoder) moduloShards(f field, g *Group) {
	items, ok := gd.list(f.val, "shards of a modulo index")
	if !ok {
		return
	}
	for i, it := range items {
		s := &Shard{Name: strconv.Itoa(i), Modulo: i, Pos: pos(it)}
		s.Cluster, _ = gd.clusterRef(it, gd.t)
		g.Shards = append(g.Shards, s)
	}
}

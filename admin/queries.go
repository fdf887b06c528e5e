package admin

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/stats"
)

var queryCols = []string{"id", "query", "calls", "errors", "error_classes", "total_ms", "mean_ms", "max_ms", "p99_ms",
	"rows", "shards", "mean_shards", "max_shards", "routes", "plan_cache_hits", "pool_wait_ms", "last_call"}

// queryOrders are the keys of SHOW QUERIES ORDER BY, each a comparison
// of two fingerprints (ascending).
var queryOrders = map[string]func(a, b stats.QuerySnapshot) int{
	"total_time": func(a, b stats.QuerySnapshot) int { return cmp.Compare(a.Total, b.Total) },
	"calls":      func(a, b stats.QuerySnapshot) int { return cmp.Compare(a.Calls, b.Calls) },
	"mean":       func(a, b stats.QuerySnapshot) int { return cmp.Compare(a.Mean(), b.Mean()) },
	"max":        func(a, b stats.QuerySnapshot) int { return cmp.Compare(a.Max, b.Max) },
	"p99":        func(a, b stats.QuerySnapshot) int { return cmp.Compare(a.P99, b.P99) },
	"rows":       func(a, b stats.QuerySnapshot) int { return cmp.Compare(a.Rows, b.Rows) },
	"shards":     func(a, b stats.QuerySnapshot) int { return cmp.Compare(a.Shards, b.Shards) },
	"errors":     func(a, b stats.QuerySnapshot) int { return cmp.Compare(a.Errors, b.Errors) },
	"pool_wait":  func(a, b stats.QuerySnapshot) int { return cmp.Compare(a.PoolWait, b.PoolWait) },
}

// queriesQuery is what SHOW QUERIES asks: ORDER BY key [ASC|DESC]
// (default total_time DESC) and LIMIT n (0: all).
type queriesQuery struct {
	order string
	asc   bool
	limit int
}

// parseQueries reads SHOW QUERIES' words after the target: [ORDER BY key
// [ASC|DESC]] [LIMIT n].
func parseQueries(words []string, text string) (*queriesQuery, error) {
	q := &queriesQuery{order: "total_time"}
	for len(words) > 0 {
		switch w := strings.ToUpper(words[0]); {
		case w == "ORDER" && len(words) >= 3 && strings.EqualFold(words[1], "BY"):
			key := strings.ToLower(words[2])
			if queryOrders[key] == nil {
				return nil, sqlerr.New("42601", "SHOW QUERIES cannot order by %q", words[2]).
					WithHint("ORDER BY takes one of %s.", strings.Join(queryOrderKeys(), ", "))
			}
			q.order, words = key, words[3:]
			if len(words) > 0 && (strings.EqualFold(words[0], "DESC") || strings.EqualFold(words[0], "ASC")) {
				q.asc, words = strings.EqualFold(words[0], "ASC"), words[1:]
			}
		case w == "LIMIT" && len(words) >= 2:
			n, err := strconv.Atoi(words[1])
			if err != nil || n < 0 {
				return nil, sqlerr.New("42601", "SHOW QUERIES: LIMIT takes a number of rows, not %q", words[1])
			}
			q.limit, words = n, words[2:]
		default:
			return nil, sqlerr.New("42601", "unrecognized admin console command %q", text).
				WithHint("SHOW QUERIES [ORDER BY %s [ASC|DESC]] [LIMIT n] [LIKE 'pattern'].", strings.Join(queryOrderKeys(), "|"))
		}
	}
	return q, nil
}

func queryOrderKeys() []string {
	keys := make([]string, 0, len(queryOrders))
	for k := range queryOrders {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// showQueries lists the statistics by fingerprint, filtered by LIKE on
// the fingerprint's text, ordered and limited as asked.
func showQueries(c *console, q *queriesQuery, like *likePattern) ([][]*string, error) {
	qs := c.src.Metrics().Queries
	if qs == nil {
		return nil, sqlerr.New("55000", "query statistics are off (proxy.query_stats.max is 0)")
	}
	list := TopQueries(qs, q.order, !q.asc, 0)
	var rows [][]*string
	for _, s := range list {
		if like != nil && !like.match(&s.Text) {
			continue
		}
		if q.limit > 0 && len(rows) == q.limit {
			break
		}
		rows = append(rows, queryRow(c, s))
	}
	return rows, nil
}

// TopQueries are the fingerprints of qs ordered by key (a key of SHOW
// QUERIES ORDER BY), largest first when desc, at most n of them (0: all).
func TopQueries(qs *stats.Queries, key string, desc bool, n int) []stats.QuerySnapshot {
	list := qs.Snapshot()
	by := queryOrders[key]
	slices.SortFunc(list, func(a, b stats.QuerySnapshot) int {
		r := by(a, b)
		if desc {
			r = -r
		}
		return cmp.Or(r, strings.Compare(a.Text, b.Text))
	})
	if n > 0 && len(list) > n {
		list = list[:n]
	}
	return list
}

func queryRow(c *console, s stats.QuerySnapshot) []*string {
	var classes []string
	for k, v := range s.ErrorClasses {
		classes = append(classes, k+":"+strconv.FormatUint(v, 10))
	}
	sort.Strings(classes)
	var routes []string
	for i, r := range c.src.Metrics().Routes() {
		if s.Routes&(1<<i) != 0 {
			routes = append(routes, r)
		}
	}
	return []*string{str(s.ID), str(s.Text), num(s.Calls), num(s.Errors), nullable(strings.Join(classes, ",")),
		millis(s.Total), millis(s.Mean()), millis(s.Max), millis(s.P99), num(s.Rows), num(s.Shards),
		str(strconv.FormatFloat(s.MeanShards(), 'f', 2, 64)), num(s.MaxShards), str(strings.Join(routes, ",")),
		num(s.CacheHits), millis(s.PoolWait), timestamp(s.LastCall)}
}

// millis is a duration in milliseconds with microsecond precision.
func millis(d time.Duration) *string {
	return str(strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64))
}

package difftest

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A query is one entry of queries.sql.
type query struct {
	ID   string
	SQL  string
	Line int // of its header in queries.sql
	// Order says how much of the row order the statement fixes.
	Order orderKind
	// KeyCols (Order == orderKeys) are the 0-based result columns holding
	// the ORDER BY keys: their sequence must match; whole rows are
	// compared as multisets (rows tied on the keys may come in any order).
	KeyCols []int
	// Write: the statement changes data. It runs once per side (plus a
	// rehearsal inside a rolled-back transaction), never twice for real.
	Write bool
	// Ignore names result columns whose values are not compared (only
	// their NULL-ness), e.g. ids filled from a sequence: the proxy draws
	// them in cached blocks, so they need not equal the oracle's.
	Ignore []string
	// NoRehearse skips the rehearsal of a write.
	NoRehearse bool
	// Error: the statement fails on the oracle, and must fail through the
	// proxy with the same SQLSTATE. Without it an error on the oracle
	// fails the test: a typo must not pass as "both sides failed alike".
	Error bool
	// Args are bound to $1, $2, ...: integers as int64 (binary format in
	// the extended protocol), NULL as nil, anything else as a string. In
	// the simple protocol pgx writes them into the statement as literals.
	Args []any
	// CountOnly compares columns, command tag and the number of rows, not
	// the rows: for a LIMIT without a total order, which may pick any rows.
	CountOnly bool
}

// where names the query's place: its line in queries.sql, or the COPY
// steps for those.
func (q *query) where() string {
	if q.Line == 0 {
		return "copy_test.go"
	}
	return fmt.Sprintf("%s:%d", queriesFile, q.Line)
}

type orderKind uint8

const (
	orderNone  orderKind = iota // compare rows as multisets
	orderFixed                  // compare rows in sequence
	orderKeys                   // compare the key columns in sequence, rows as multisets
)

var (
	headerRE = regexp.MustCompile(`^--\s*q:\s*(\S+)\s*(.*)$`)
	idRE     = regexp.MustCompile(`^[a-z0-9_.]+$`)
)

// parseQueries reads the query file. An entry is a header line
//
//	-- q: ID [ordered | keys=1,2] [write] [error] [ignore=col,...] [norehearse] [countonly] [args=v,...]
//
// followed by the statement, up to the next header. Other lines starting
// with "--" are comments; a trailing semicolon is dropped. keys= counts
// result columns from 1, as ORDER BY does.
func parseQueries(path string) ([]query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out  []query
		cur  *query
		body []string
		errs []string
		seen = map[string]int{}
	)
	flush := func() {
		if cur == nil {
			return
		}
		cur.SQL = strings.TrimSuffix(strings.TrimSpace(strings.Join(body, "\n")), ";")
		if cur.SQL == "" {
			errs = append(errs, fmt.Sprintf("%s:%d: query %s has no statement", path, cur.Line, cur.ID))
		}
		out = append(out, *cur)
		cur, body = nil, nil
	}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if m := headerRE.FindStringSubmatch(trimmed); m != nil {
			flush()
			cur = &query{ID: m[1], Line: n}
			if !idRE.MatchString(cur.ID) {
				errs = append(errs, fmt.Sprintf("%s:%d: query id %q: use a-z, 0-9, '_' and '.'", path, n, cur.ID))
			}
			if first, dup := seen[cur.ID]; dup {
				errs = append(errs, fmt.Sprintf("%s:%d: query id %s already used at line %d", path, n, cur.ID, first))
			}
			seen[cur.ID] = n
			for _, opt := range strings.Fields(m[2]) {
				if err := cur.option(opt); err != nil {
					errs = append(errs, fmt.Sprintf("%s:%d: %v", path, n, err))
				}
			}
			continue
		}
		if strings.HasPrefix(trimmed, "--") || cur == nil && trimmed == "" {
			continue
		}
		if cur == nil {
			errs = append(errs, fmt.Sprintf("%s:%d: statement text before the first '-- q:' header", path, n))
			continue
		}
		body = append(body, line)
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, nil
}

func (q *query) option(opt string) error {
	name, val, hasVal := strings.Cut(opt, "=")
	switch {
	case name == "ordered" && !hasVal:
		q.Order = orderFixed
	case name == "keys" && hasVal:
		q.Order = orderKeys
		for _, s := range strings.Split(val, ",") {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return fmt.Errorf("keys=%s: want column numbers from 1", val)
			}
			q.KeyCols = append(q.KeyCols, n-1)
		}
	case name == "write" && !hasVal:
		q.Write = true
	case name == "norehearse" && !hasVal:
		q.NoRehearse = true
	case name == "error" && !hasVal:
		q.Error = true
	case name == "countonly" && !hasVal:
		q.CountOnly = true
	case name == "args" && hasVal:
		for _, a := range strings.Split(val, ",") {
			if a == "NULL" {
				q.Args = append(q.Args, nil)
			} else if strings.HasPrefix(a, "{") {
				q.Args = append(q.Args, strings.ReplaceAll(a, ";", ",")) // an array: {1;2} is '{1,2}'
			} else if n, err := strconv.ParseInt(a, 10, 64); err == nil {
				q.Args = append(q.Args, n)
			} else {
				q.Args = append(q.Args, a)
			}
		}
	case name == "ignore" && hasVal:
		q.Ignore = append(q.Ignore, strings.Split(val, ",")...)
	default:
		return fmt.Errorf("unknown option %q (want ordered, keys=N,..., write, error, ignore=col,..., norehearse, countonly, args=v,...)", opt)
	}
	return nil
}

// parseAllowList reads the allow-list: groups of query ids, each group
// opened by a line "reason: TEXT" that says why the proxy refuses them.
// Blank lines and lines starting with '#' are ignored.
func parseAllowList(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var errs []string
	reason := ""
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "reason:"):
			reason = strings.TrimSpace(strings.TrimPrefix(line, "reason:"))
			if reason == "" {
				errs = append(errs, fmt.Sprintf("%s:%d: empty reason", path, i+1))
			}
		case reason == "":
			errs = append(errs, fmt.Sprintf("%s:%d: %s comes before any \"reason:\" line", path, i+1, line))
		case !idRE.MatchString(line):
			errs = append(errs, fmt.Sprintf("%s:%d: %q is not a query id", path, i+1, line))
		case out[line] != "":
			errs = append(errs, fmt.Sprintf("%s:%d: %s is listed twice", path, i+1, line))
		default:
			out[line] = reason
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, nil
}

// formatAllowList writes an allow-list: header, then one group per
// reason (largest first), ids in queries.sql order.
func formatAllowList(header string, allow map[string]string, order []query) string {
	byReason := map[string][]string{}
	for _, q := range order {
		if r, ok := allow[q.ID]; ok {
			byReason[r] = append(byReason[r], q.ID)
		}
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b string) int {
		if d := len(byReason[b]) - len(byReason[a]); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	b.WriteString(header)
	for _, r := range reasons {
		fmt.Fprintf(&b, "\nreason: %s\n", r)
		for _, id := range byReason[r] {
			b.WriteString(id + "\n")
		}
	}
	return b.String()
}

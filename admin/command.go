package admin

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// command is one parsed console command.
type command struct {
	verb   string // SHOW, RELOAD, PAUSE, RESUME, KILL, GSI (BACKFILL)
	target string // SHOW's target, upper case
	arg    string // PAUSE / RESUME cluster, KILL client id, GSI BACKFILL index, WORKFLOW id
	opt    string // WORKFLOW's option: DRY_RUN, KEEP_DATA; SWITCHOVER's WAIT PROMOTION
	like   *likePattern
	// queries is SHOW QUERIES' ORDER BY and LIMIT.
	queries *queriesQuery
}

type result struct {
	rows [][]*string
	tag  string
	n    int
	// filtered: LIKE was applied already (SHOW QUERIES matches the text).
	filtered bool
}

// show is one SHOW target: its columns and how to compute its rows.
type show struct {
	cols []string
	rows func(c *console) ([][]*string, error)
}

// shows lists the SHOW targets (filled in by init: the functions read it).
var shows map[string]show

func init() {
	shows = map[string]show{
		"CLIENTS":      {clientCols, showClients},
		"SERVERS":      {serverCols, showServers},
		"POOLS":        {poolCols, showPools},
		"STATS":        {statsCols, showStats},
		"CLUSTERS":     {clusterCols, showClusters},
		"SHARDS":       {shardCols, showShards},
		"TOPOLOGY":     {topologyCols, showTopology},
		"PREPARED":     {preparedCols, showPrepared},
		"TRANSACTIONS": {transactionCols, showTransactions},
		"PLAN_CACHE":   {planCacheCols, showPlanCache},
		"GSI":          {gsiCols, showGSI},
		"WORKFLOWS":    {workflowCols, showWorkflows},
		"PROXIES":      {proxiesCols, showProxies},
		"VERSION":      {[]string{"version"}, showVersion},
		"CONFIG":       {configCols, showConfig},
		"QUERIES": {queryCols, func(c *console) ([][]*string, error) {
			return showQueries(c, &queriesQuery{order: "total_time"}, nil)
		}},
	}
}

// Commands lists every command the console answers, for messages and
// `shardgate status`.
func Commands() []string {
	var out []string
	for name := range shows {
		if name == "QUERIES" {
			continue // with its options below
		}
		out = append(out, "SHOW "+name)
	}
	sort.Strings(out)
	return append(out, "SHOW QUERIES [ORDER BY key [DESC]] [LIMIT n] [LIKE 'pattern']", "RESET QUERIES", "RELOAD", "PAUSE [cluster]", "RESUME [cluster]", "SWITCHOVER cluster TO host:port [WAIT PROMOTION]", "KILL client_id", "GSI BACKFILL name",
		"WORKFLOW SWITCH id [DRY_RUN]", "WORKFLOW REVERSE id [DRY_RUN]", "WORKFLOW COMPLETE id [KEEP_DATA]")
}

var (
	likeRe = regexp.MustCompile(`(?is)^(.*?)\s+like\s+'((?:[^']|'')*)'$`)
	wordRe = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	// hostRe is SWITCHOVER's host:port.
	hostRe = regexp.MustCompile(`^[A-Za-z0-9_.\-]+:[0-9]+$`)
)

// parse reads one command: SHOW target [LIKE 'pattern'], RELOAD,
// PAUSE [cluster], RESUME [cluster], KILL client_id.
func parse(text string) (*command, error) {
	cmd := &command{}
	if m := likeRe.FindStringSubmatch(text); m != nil {
		text = m[1]
		cmd.like = &likePattern{strings.ReplaceAll(m[2], "''", "'")}
	}
	words := strings.Fields(text)
	if len(words) == 0 {
		return nil, syntaxError(text)
	}
	cmd.verb = strings.ToUpper(words[0])
	for _, w := range words[1:] {
		if !wordRe.MatchString(w) && !(cmd.verb == "SWITCHOVER" && hostRe.MatchString(w)) {
			return nil, syntaxError(text)
		}
	}
	switch cmd.verb {
	case "SHOW":
		if len(words) > 2 && strings.EqualFold(words[1], "QUERIES") {
			q, err := parseQueries(words[2:], text)
			if err != nil {
				return nil, err
			}
			cmd.target, cmd.queries = "QUERIES", q
			return cmd, nil
		}
		if len(words) != 2 {
			return nil, syntaxError(text)
		}
		cmd.target = strings.ToUpper(words[1])
		if _, ok := shows[cmd.target]; !ok {
			return nil, sqlerr.New("0A000", "unrecognized SHOW target %q", words[1]).
				WithHint("The admin console answers: %s.", strings.Join(Commands(), ", "))
		}
		return cmd, nil
	case "WORKFLOW":
		return parseWorkflow(cmd, words, text)
	case "RESET":
		if len(words) != 2 || !strings.EqualFold(words[1], "QUERIES") || cmd.like != nil {
			return nil, syntaxError(text)
		}
	case "RELOAD":
		if len(words) != 1 || cmd.like != nil {
			return nil, syntaxError(text)
		}
	case "GSI":
		if len(words) != 3 || strings.ToUpper(words[1]) != "BACKFILL" || cmd.like != nil {
			return nil, syntaxError(text)
		}
		cmd.arg = words[2]
	case "SWITCHOVER":
		// SWITCHOVER cluster TO host:port [WAIT PROMOTION]
		waits := len(words) == 6 && strings.EqualFold(words[4], "WAIT") && strings.EqualFold(words[5], "PROMOTION")
		if len(words) != 4 && !waits || !strings.EqualFold(words[2], "TO") || cmd.like != nil {
			return nil, syntaxError(text)
		}
		cmd.arg, cmd.target = words[1], words[3]
		if waits {
			cmd.opt = "WAIT PROMOTION"
		}
	case "PAUSE", "RESUME", "KILL":
		if len(words) > 2 || cmd.like != nil || (cmd.verb == "KILL" && len(words) != 2) {
			return nil, syntaxError(text)
		}
		if len(words) == 2 {
			cmd.arg = words[1]
		}
	default:
		return nil, syntaxError(text)
	}
	return cmd, nil
}

func syntaxError(text string) error {
	return sqlerr.New("42601", "unrecognized admin console command %q", text).
		WithHint("The admin console answers: %s.", strings.Join(Commands(), ", "))
}

func (cmd *command) columns() []string {
	if cmd.verb == "WORKFLOW" {
		return workflowLineCols
	}
	if cmd.verb == "SWITCHOVER" {
		return switchoverCols
	}
	if cmd.verb != "SHOW" {
		return nil
	}
	return shows[cmd.target].cols
}

func (cmd *command) exec(c *console) (result, error) {
	switch cmd.verb {
	case "SHOW":
		if cmd.target == "QUERIES" {
			q := cmd.queries
			if q == nil {
				q = &queriesQuery{order: "total_time"}
			}
			rows, err := showQueries(c, q, cmd.like)
			return result{rows: rows, filtered: true}, err
		}
		rows, err := shows[cmd.target].rows(c)
		return result{rows: rows}, err
	case "RESET":
		qs := c.src.Metrics().Queries
		if qs == nil {
			return result{}, sqlerr.New("55000", "query statistics are off (proxy.query_stats.max is 0)")
		}
		qs.Reset()
		c.log.Info("admin console: RESET QUERIES", "user", c.user)
		return result{tag: "RESET"}, nil
	case "RELOAD":
		return result{tag: "RELOAD"}, c.reload()
	case "GSI":
		return result{tag: "GSI BACKFILL"}, c.backfill(cmd.arg)
	case "WORKFLOW":
		return c.workflow(cmd)
	case "PAUSE", "RESUME":
		return result{tag: cmd.verb}, c.pauseResume(cmd.verb == "PAUSE", cmd.arg)
	case "SWITCHOVER":
		return c.switchover(cmd.arg, cmd.target, backend.SwitchoverOptions{WaitPromotion: cmd.opt == "WAIT PROMOTION"})
	default: // KILL
		id, err := strconv.ParseUint(cmd.arg, 10, 32)
		if err != nil || !c.src.Clients().Kill(uint32(id)) {
			return result{}, sqlerr.New("42704", "no client session with id %s (SHOW CLIENTS lists them)", cmd.arg)
		}
		c.log.Info("admin console: KILL", "user", c.user, "client_id", id)
		return result{tag: "KILL"}, nil
	}
}

// likePattern is SQL LIKE: % any run, _ any character, \ escapes.
type likePattern struct{ pat string }

func (l *likePattern) match(v *string) bool {
	if v == nil {
		return false
	}
	return likeMatch([]rune(l.pat), []rune(*v))
}

func likeMatch(p, s []rune) bool {
	for len(p) > 0 {
		switch p[0] {
		case '%':
			for i := 0; i <= len(s); i++ {
				if likeMatch(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '_':
			if len(s) == 0 {
				return false
			}
		case '\\':
			if len(p) > 1 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || s[0] != p[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}

// Cell formatting: every column is text; nil is NULL.

func str(s string) *string { return &s }

func num[T int | int64 | uint32 | uint64](n T) *string { return str(fmt.Sprint(n)) }

func boolean(b bool) *string {
	if b {
		return str("true")
	}
	return str("false")
}

func timestamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	return str(t.UTC().Format("2006-01-02 15:04:05.000Z"))
}

// seconds is a duration in seconds with millisecond precision.
func seconds(d time.Duration) *string { return str(strconv.FormatFloat(d.Seconds(), 'f', 3, 64)) }

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return str(s)
}

// reload reads the topology file again and applies it.
func (c *console) reload() error {
	file := c.src.Routing().File
	if file == "" {
		return sqlerr.New("55000", "RELOAD: this proxy was not started from a topology file")
	}
	c.log.Info("admin console: RELOAD", "user", c.user, "file", file)
	t, err := topology.Load(file)
	if err != nil {
		return sqlerr.New("F0000", "RELOAD: %v", err)
	}
	if err := c.src.Reload(t); err != nil {
		return err
	}
	c.log.Info("admin console: topology reloaded", "file", file)
	return nil
}

var switchoverCols = []string{"cluster", "host", "epoch", "pause_ms"}

// switchover runs SWITCHOVER cluster TO host [WAIT PROMOTION]: one row,
// with how long the cluster's writes were held.
func (c *console) switchover(cluster, host string, opts backend.SwitchoverOptions) (result, error) {
	rs := c.src.Routing().Replicas[cluster]
	if rs == nil {
		return result{}, sqlerr.New("42704", "cluster %s has no replicas to switch over to", cluster)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pause, epoch, err := rs.Switchover(ctx, host, opts)
	if err != nil {
		return result{}, err
	}
	c.log.Info("admin console: SWITCHOVER", "user", c.user, "cluster", cluster, "host", host, "wait_promotion", opts.WaitPromotion, "epoch", epoch, "pause", pause)
	ms := fmt.Sprintf("%.1f", float64(pause.Microseconds())/1000)
	return result{rows: [][]*string{{str(cluster), str(rs.Primary().Host()), num(epoch), str(ms)}}, tag: "SWITCHOVER"}, nil
}

package workflows

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/sqlerr"
)

// refuseFunction is the trigger function of the write-refusing triggers.
const refuseFunction = `CREATE SCHEMA IF NOT EXISTS shardgate;
CREATE OR REPLACE FUNCTION shardgate.refuse_moved_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION USING ERRCODE = '40001',
		MESSAGE = format('table %I.%I is served by other shards (%s)', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_ARGV[0]),
		HINT = 'Its traffic was switched by a shardgate workflow: retry through the proxy.';
END $$;
`

// triggersSQL creates (or drops) on tables the trigger that refuses
// writes with 40001 on the side that does not serve.
func triggersSQL(id int64, tables []*TablePlan, create bool) string {
	var b strings.Builder
	if create {
		b.WriteString(refuseFunction)
	}
	for _, t := range tables {
		trig := ident(fmt.Sprintf("shardgate_wf%d_moved", id))
		if create {
			fmt.Fprintf(&b, "CREATE OR REPLACE TRIGGER %s BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION shardgate.refuse_moved_write('workflow %d');\n",
				trig, qname(t.Name), id)
		} else {
			fmt.Fprintf(&b, "DO $$ BEGIN IF to_regclass('%[2]s') IS NOT NULL THEN DROP TRIGGER IF EXISTS %[1]s ON %[2]s; END IF; END $$;\n",
				trig, strings.ReplaceAll(qname(t.Name), "'", "''"))
		}
	}
	return b.String()
}

func execOn(ctx context.Context, dsn, sql string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}

// createStream creates a source's publication and slot (pgoutput) for
// the stream that starts at a switch.
func createStream(ctx context.Context, src *Source, id int64) error {
	c, err := pgx.Connect(ctx, src.DSN)
	if err != nil {
		return fmt.Errorf("%s: %w", src.Cluster, err)
	}
	defer c.Close(context.Background())
	var names []string
	for _, t := range src.Tables {
		names = append(names, qname(t.Name))
	}
	if _, err := c.Exec(ctx, fmt.Sprintf(`DROP PUBLICATION IF EXISTS %[1]s; CREATE PUBLICATION %[1]s FOR TABLE %[2]s`,
		ident(pubName(id)), strings.Join(names, ", "))); err != nil {
		return fmt.Errorf("%s: create the stream's publication: %w", src.Cluster, err)
	}
	if _, err := c.Exec(ctx, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, slotName(id, src.Cluster)); err != nil {
		return fmt.Errorf("%s: create the stream's slot: %w", src.Cluster, err)
	}
	return nil
}

func liveProxies(ctx context.Context, conn *pgx.Conn) ([]routestate.Proxy, error) {
	ps, err := routestate.Proxies(ctx, conn)
	return slices.DeleteFunc(ps, func(p routestate.Proxy) bool { return !p.Live }), err
}

// waitAcks waits until every proxy live when the buffer was requested
// holds it, up to AckTimeout. Each notifies routestate.AckChannel as it
// reports holding it (the switch LISTENs on it since before the hold), so
// the wait wakes then rather than at its next look.
func (s *switcher) waitAcks(ctx context.Context, live []routestate.Proxy) error {
	return s.waitProxies(ctx, live, "the buffer", func(want, p routestate.Proxy) bool {
		at, ok := p.Acked[s.sw.Buffer]
		if ok {
			if _, seen := s.rec.Proxies[want.ID]; !seen {
				s.rec.Proxies[want.ID] = ProxyFigures{Addr: want.Addr, AckMS: ms(at.Sub(s.armed.CreatedAt))}
			}
		}
		return ok
	})
}

// ping asks every proxy live when the switch started to beat its
// heartbeat (a notification on routestate.Channel that carries no
// revision wakes it) and waits up to AckTimeout until each did, before
// the buffer is requested: a frozen proxy (SIGSTOP) makes the switch
// abort while no write is held anywhere, instead of holding the others'
// writes for AckTimeout before it aborts.
func (s *switcher) ping(ctx context.Context) error {
	var sent time.Time
	if err := s.main.QueryRow(ctx, `SELECT clock_timestamp() FROM (SELECT pg_notify($1, 'ping')) n`, routestate.Channel).Scan(&sent); err != nil {
		return err
	}
	return s.waitProxies(ctx, s.live, "a ping before the hold", func(_, p routestate.Proxy) bool { return p.HeartbeatAt.After(sent) })
}

// waitProxies waits until ok holds for every proxy of live still
// registered, up to AckTimeout, looking again at each notification the
// switch's connection to main receives and every 20 ms.
func (s *switcher) waitProxies(ctx context.Context, live []routestate.Proxy, what string, ok func(want, p routestate.Proxy) bool) error {
	deadline := time.Now().Add(s.o.AckTimeout)
	for {
		ps, err := routestate.Proxies(ctx, s.main)
		if err != nil {
			return err
		}
		var missing []string
		for _, want := range live {
			i := slices.IndexFunc(ps, func(p routestate.Proxy) bool { return p.ID == want.ID })
			if i >= 0 && !ok(want, ps[i]) { // (not registered: it stopped)
				missing = append(missing, fmt.Sprintf("%s (%s)", want.ID, want.Addr))
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return sqlerr.New(sqlerr.LockNotAvailable, "proxies did not acknowledge %s within %s: %s", what, s.o.AckTimeout, strings.Join(missing, ", "))
		}
		if err := s.awaitNotification(ctx, deadline); err != nil {
			return err
		}
	}
}

// waitLag waits until every stream of the serving side lags less than
// MaxLag.
func waitLag(ctx context.Context, store *Store, id int64, sd *sides, o SwitchOptions) error {
	deadline := time.Now().Add(o.LagWait)
	for {
		st, err := store.Status(ctx, id)
		if err != nil {
			return err
		}
		var behind []string
		for _, src := range sd.fromClusters() {
			i := slices.IndexFunc(st.Streams, func(s StreamStatus) bool { return s.Source == src.Cluster })
			// A stream whose runner is gone stops recording AppliedAt, and
			// the 5 s bound finds it behind; a lag status read from its slot
			// (FromSlot: the runner's heartbeat late under load, or its row
			// not yet refreshed since it started) is not a reason by itself.
			if i < 0 || st.Streams[i].AppliedAt == nil || st.Streams[i].LagSeconds >= o.MaxLag.Seconds() ||
				time.Since(*st.Streams[i].AppliedAt) > 5*time.Second {
				behind = append(behind, src.Cluster)
			}
		}
		if len(behind) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return sqlerr.New(sqlerr.ObjectNotInPrerequisiteState, "workflow %d: the stream from %s lags more than %s (or reports no progress)",
				id, strings.Join(behind, ", "), o.MaxLag)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func planText(id int64, op string, sd *sides, o SwitchOptions) []string {
	var from, to []string
	for _, s := range sd.fromClusters() {
		from = append(from, s.Cluster)
	}
	for _, s := range sd.toClusters() {
		to = append(to, s.Cluster)
	}
	return []string{
		fmt.Sprintf("workflow %d %s: tables %s, from %s to %s", id, op, strings.Join(sd.tables, ", "), strings.Join(from, ", "), strings.Join(to, ", ")),
		fmt.Sprintf("1. wait until the stream lags less than %s", o.MaxLag),
		fmt.Sprintf("2. create the stream back: publication %s and a slot on each of %s; drop their write-refusing triggers", pubName(id), strings.Join(to, ", ")),
		fmt.Sprintf("3. bring the stream close to %s: a marker on each, awaited applied (up to three rounds); ping every live proxy: each beats within %s, else abort (nothing held)", strings.Join(from, ", "), o.AckTimeout),
		fmt.Sprintf("4. routing revision: every live proxy holds writes to those tables (up to %s); each acknowledges within %s, else abort", o.Hold, o.AckTimeout),
		fmt.Sprintf("5. on %s at once: LOCK the tables IN EXCLUSIVE MODE (open transactions on them get %s to end, else abort), add the trigger refusing writes with 40001, write the switch's marker, commit", strings.Join(from, ", "), o.TxWait),
		fmt.Sprintf("6. wait until the stream applied everything before the marker; meanwhile set the sequences of %s past the serving side's", strings.Join(to, ", ")),
		"7. commit the routing revision that routes the tables to the new side and releases the held writes (the decision)",
		fmt.Sprintf("8. drop the slots of the old stream on %s", strings.Join(from, ", ")),
	}
}

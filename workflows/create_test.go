package workflows

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

func TestCreateRecordsWorkflowAndCreatesTargets(t *testing.T) {
	f, spec := moveTablesFixture(t, 100)
	ctx := testCtx(t)
	store := f.store()
	id, _, err := Create(ctx, store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	// Another connection (another process) sees the record.
	other := f.store()
	w, err := other.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if w.Phase != PhaseCreated || w.Spec.Kind != MoveTables || w.Spec.Tables[0] != "orders" {
		t.Fatalf("got %+v", w)
	}
	if n := f.count("main", `SELECT count(*) FROM shardgate.workflow_tables WHERE workflow_id = $1 AND table_name = 'public.orders' AND created_on = '{t0,t1}'`, id); n != 1 {
		t.Fatalf("workflow_tables rows = %d", n)
	}
	for _, c := range []string{"t0", "t1"} {
		// Columns and primary key copied; secondary indexes wait for the copy.
		if n := f.count(c, `SELECT count(*) FROM pg_index WHERE indrelid = 'public.orders'::regclass`); n != 1 {
			t.Errorf("%s: %d indexes on orders, want the primary key only", c, n)
		}
		if n := f.count(c, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'orders' AND (column_name, data_type) IN (('amount', 'numeric'), ('note', 'text'))`); n != 2 {
			t.Errorf("%s: columns missing", c)
		}
	}
	if _, err := store.Get(ctx, 9999); sqlerr.Code(err) != sqlerr.UndefinedObject {
		t.Errorf("unknown id: %v", err)
	}
}

// TestCreateCopiesDefaultsAndChecks: a target table created by a workflow
// has the source's column defaults and CHECK constraints, so an INSERT
// that relies on them behaves the same once the traffic is switched; a
// default drawn from a sequence of the source is left out.
func TestCreateCopiesDefaultsAndChecks(t *testing.T) {
	f, spec := moveTablesFixture(t, 10)
	f.exec("main", `CREATE SEQUENCE orders_seq;
		ALTER TABLE orders ALTER COLUMN id SET DEFAULT nextval('orders_seq'),
			ADD COLUMN status text NOT NULL DEFAULT 'pending' CONSTRAINT orders_status CHECK (status IN ('pending', 'paid')),
			ADD COLUMN created timestamptz NOT NULL DEFAULT now()`)
	if _, _, err := Create(testCtx(t), f.store(), spec, false); err != nil {
		t.Fatal(err)
	}
	f.exec("t0", `INSERT INTO orders (id, customer_id) VALUES (1, 1)`)
	if n := f.count("t0", `SELECT count(*) FROM orders WHERE status = 'pending' AND created > now() - interval '1 minute'`); n != 1 {
		t.Fatalf("defaults not applied on the target: %d rows", n)
	}
	err := f.env.Clusters[0].Exec(context.Background(), f.dbs["t0"], `INSERT INTO orders (id, customer_id, status) VALUES (2, 1, 'lost')`)
	if !strings.Contains(fmt.Sprint(err), `violates check constraint "orders_status"`) {
		t.Fatalf("a status outside the CHECK: %v", err)
	}
	if n := f.count("t0", `SELECT count(*) FROM information_schema.columns WHERE table_name = 'orders' AND column_name = 'id' AND column_default IS NULL`); n != 1 {
		t.Fatalf("the id column took the source's nextval default")
	}
}

func TestCreateRefusesTableWithoutPrimaryKey(t *testing.T) {
	f, spec := moveTablesFixture(t, 10)
	spec.Tables = []string{"orders", "nopk"}
	_, _, err := Create(testCtx(t), f.store(), spec, false)
	if sqlerr.Code(err) != sqlerr.ObjectNotInPrerequisiteState || !strings.Contains(err.Error(), "public.nopk has no primary key") {
		t.Fatalf("err = %v", err)
	}
	if n := f.count("main", `SELECT count(*) FROM shardgate.workflows`); n != 0 {
		t.Fatalf("%d workflows recorded", n)
	}
}

func TestCreateRefusesNonEmptyTargetAndSourceAsTarget(t *testing.T) {
	f, spec := moveTablesFixture(t, 10)
	f.exec("t1", `CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, note text, amount numeric(10,2)); INSERT INTO orders VALUES (1, 1, 'x', 1)`)
	_, _, err := Create(testCtx(t), f.store(), spec, true)
	if sqlerr.Code(err) != sqlerr.ObjectNotInPrerequisiteState || !strings.Contains(err.Error(), "target cluster t1 already has rows") {
		t.Fatalf("err = %v", err)
	}
	spec.To = strings.Replace(spec.To, `"80-": t1`, `"80-": main`, 1)
	if _, _, err := Create(testCtx(t), f.store(), spec, true); !strings.Contains(err.Error(), "cluster main is both a source and a target") {
		t.Fatalf("err = %v", err)
	}
}

func TestCreateDryRunCreatesNothing(t *testing.T) {
	f, spec := moveTablesFixture(t, 10)
	id, pf, err := Create(testCtx(t), f.store(), spec, true)
	if err != nil || id != 0 {
		t.Fatal(id, err)
	}
	out := pf.Describe()
	for _, want := range []string{
		`create on t0: CREATE TABLE IF NOT EXISTS "public"."orders" ("id" bigint NOT NULL, "customer_id" bigint NOT NULL, "note" text, "amount" numeric(10,2), PRIMARY KEY ("id"))`,
		`create on main: publication for "public"."orders"`,
		`copy public.orders from main to t0, t1`,
		`after the copy, on t0, t1: CREATE INDEX IF NOT EXISTS orders_customer ON public.orders USING btree (customer_id)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if n := f.count("t0", `SELECT count(*) FROM pg_tables WHERE tablename = 'orders'`); n != 0 {
		t.Errorf("dry run created the table")
	}
	if n := f.count("main", `SELECT count(*) FROM shardgate.workflows`); n != 0 {
		t.Errorf("dry run recorded a workflow")
	}
}

// Stores opened at once on a fresh main all create the schema: the
// losers of the catalog race retry instead of failing.
func TestOpenStoreConcurrently(t *testing.T) {
	for round := 0; round < 3; round++ {
		f := newFixture(t, "main")
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				s, err := OpenStore(context.Background(), f.dsn("main"))
				if err == nil {
					s.Close()
				}
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
}

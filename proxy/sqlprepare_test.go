package proxy

import (
	"strconv"
	"testing"
)

// SQL PREPARE / EXECUTE / DEALLOCATE under transaction pooling, on a
// sharded table, with Postgres's errors.
func TestSQLPrepareExecute(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1 })
	c := setupShop(t, p)
	id := customerOn(t, p, env.Clusters[1].Name)
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES (1, $1, 2.5), (2, $1, 3)", id)
	mustExec(t, c, "PREPARE q (bigint) AS SELECT sum(total) FROM orders WHERE customer_id = $1")
	got, err := simpleRows(t, c, "EXECUTE q("+strconv.Itoa(id)+")")
	if err != nil || len(got) != 1 || got[0] != "5.50" {
		t.Fatalf("EXECUTE: %v %v", got, err)
	}
	mustExec(t, c, "PREPARE ins AS INSERT INTO orders (id, customer_id, total) VALUES ($1, $2, $3)")
	if _, err := simpleRows(t, c, "EXECUTE ins(3, "+strconv.Itoa(id)+", 1)"); err != nil {
		t.Fatal(err)
	}
	if got, err := simpleRows(t, c, "EXECUTE q("+strconv.Itoa(id)+")"); err != nil || got[0] != "6.50" {
		t.Fatalf("EXECUTE after insert: %v %v", got, err)
	}
	if _, err := simpleRows(t, c, "PREPARE q AS SELECT 1"); sqlstate(err) != "42P05" {
		t.Fatalf("duplicate PREPARE: want 42P05, got %v", err)
	}
	mustExec(t, c, "DEALLOCATE q")
	if _, err := simpleRows(t, c, "EXECUTE q(1)"); sqlstate(err) != "26000" {
		t.Fatalf("EXECUTE after DEALLOCATE: want 26000, got %v", err)
	}
	mustExec(t, c, "DEALLOCATE ALL")
	if _, err := simpleRows(t, c, "EXECUTE ins(4, 1, 1)"); sqlstate(err) != "26000" {
		t.Fatalf("EXECUTE after DEALLOCATE ALL: want 26000, got %v", err)
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
)

// ledgerSchema is in main: one row per committed write transaction of the
// load, written in the same (two-phase) transaction as the write.
const ledgerSchema = `CREATE TABLE ledger (client int NOT NULL, seq bigint NOT NULL, op char NOT NULL,
	order_id bigint NOT NULL, customer_id bigint, PRIMARY KEY (client, seq))`

// writeScript is the pgbench script. Client k's j-th transaction (j from
// 1; pgbench keeps a client's variables from one transaction to the
// next) does, by j mod 4:
//
//	0: inserts order first + j*clients + k of a customer, amount 1;
//	1: adds 1 to the amount of order 4b+1 (a non-key update);
//	2: moves order 4b+2 to another customer: deletes it and inserts it
//	   again with the same amount (the proxy refuses an UPDATE of the key);
//	3: deletes order 4b+3;
//
// where k is pgbench's client id plus off (the clients of a second pgbench
// follow the first's) and b = ((j/4)*clients + k) mod quarter, so every initial order a
// client touches is its own (quarter is a multiple of clients) and exists
// when it is updated or moved. Each writes its ledger row in the same
// transaction. Orders 4b+1..3 still have the customer they were loaded
// with (1 + id mod customers, initialOrder), which the statements name:
// each write goes to one shard, as an application's would.
const writeScript = `\set cid :client_id + :off
\set j :j + 1
\set op :j % 4
\set b ((:j / 4) * :clients + :cid) % :quarter
\if :op = 0
\set id :first + :j * :clients + :cid
\set c 1 + (:j * 7919 + :cid * 104729) % :customers
BEGIN;
INSERT INTO orders (id, customer_id, note, amount) VALUES (:id, :c, 'new', 1);
INSERT INTO ledger VALUES (:cid, :j, 'i', :id, :c);
COMMIT;
\elif :op = 1
\set id 4 * :b + 1
\set ic 1 + :id % :customers
BEGIN;
UPDATE orders SET amount = amount + 1 WHERE customer_id = :ic AND id = :id;
INSERT INTO ledger VALUES (:cid, :j, 'u', :id, NULL);
COMMIT;
\elif :op = 2
\set id 4 * :b + 2
\set c 1 + (:j * 104723 + :cid) % :customers
\set ic 1 + :id % :customers
BEGIN;
DELETE FROM orders WHERE customer_id = :ic AND id = :id RETURNING amount AS amt \gset
INSERT INTO orders (id, customer_id, note, amount) VALUES (:id, :c, 'moved', :amt);
INSERT INTO ledger VALUES (:cid, :j, 'k', :id, :c);
COMMIT;
\else
\set id 4 * :b + 3
\set ic 1 + :id % :customers
BEGIN;
DELETE FROM orders WHERE customer_id = :ic AND id = :id;
INSERT INTO ledger VALUES (:cid, :j, 'd', :id, NULL);
COMMIT;
\endif
`

// firstNewOrder is the id base of the orders the load inserts.
const firstNewOrder = 1000000000

// startLoadOn starts pgbench through the proxy on port, for as long as it
// is let run or, in the -switch scenario, for -switch-load with
// per-transaction logs (name.PID...) in the temporary directory; index
// numbers the pgbench (its clients follow the previous ones').
func (h *harness) startLoadOn(port, index int, name string) (*benchkit.Proc, error) {
	bin := h.cfg.pgbench
	if bin == "" {
		if dir, err := testenv.FindBinaries(); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "pgbench")); err == nil {
				bin = filepath.Join(dir, "pgbench")
			}
		}
	}
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("pgbench"); err != nil {
			return nil, fmt.Errorf("pgbench not found (Debian: apt-get install postgresql-client)")
		}
	}
	script := filepath.Join(h.tmp, "write.sql")
	if err := os.WriteFile(script, []byte(writeScript), 0o644); err != nil {
		return nil, err
	}
	c, all, secs := h.cfg.clients, h.cfg.clients, "86400"
	var extra []string
	if h.cfg.switches {
		all, secs = 2*c, strconv.Itoa(int(h.cfg.switchLoad.Seconds()))
		extra = []string{"-l", "--log-prefix", filepath.Join(h.tmp, name)}
	}
	args := append(extra, "-n", "-M", "simple", "-c", strconv.Itoa(c), "-j", strconv.Itoa(min(c, 2)), "-T", secs,
		"-D", "j=0", "-D", "off="+strconv.Itoa(index*c), "-D", "clients="+strconv.Itoa(all), "-D", "quarter="+strconv.Itoa(h.cfg.orders/4),
		"-D", "customers="+strconv.Itoa(h.cfg.customers), "-D", "first="+strconv.Itoa(firstNewOrder),
		"-f", script, fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=bench sslmode=disable", port))
	logf("write load: pgbench %v", args)
	return benchkit.StartProc(name, filepath.Join(h.tmp, name+".log"), nil, bin, args...)
}

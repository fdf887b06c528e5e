package proxy

import "github.com/shardgate/shardgate/planner"

// Outside a transaction block Postgres runs everything between two Syncs
// as one implicit transaction: an error rolls back what ran before it and
// skips what follows ("Pipelining" in the protocol's chapter). The proxy
// sends a batch's statements to their clusters before it reads any answer,
// so once a batch both writes and spans several clusters each cluster's
// own implicit transaction is not enough: a write before the error on
// another cluster, or after it, would commit at Sync. A read merged
// across shards spans them too: its merge may fail (22012 of an
// expression over its aggregates, 0A000) while the proxy reads the
// answers, after the Sync went to the backends. From the statement
// that makes a batch so, it runs in a transaction of the proxy's that Sync
// ends (with two-phase commit when it wrote on several clusters); the
// connection that ran the batch's earlier writes joins it (an
// extended-protocol BEGIN turns the backend's implicit transaction, with
// what already ran in it, into a transaction block). Batches on one
// cluster, and reads, run as before.

// implicitTx notes where a statement bound outside a transaction block
// runs (targets) and opens the batch's transaction when the batch now
// writes and spans several clusters.
func (bt *batch) implicitTx(plan *planner.Plan, targets []planner.Target) error {
	ss := bt.ss
	if ss.tx != nil {
		return nil
	}
	prev, prevWrote := ss.batchOn, ss.batchWrote
	for _, t := range targets {
		switch ss.batchOn {
		case "":
			ss.batchOn = t.Cluster
		case t.Cluster, "*":
		default:
			ss.batchOn = "*"
		}
	}
	ss.batchWrote = ss.batchWrote || plan.Kind.IsWrite()
	if ss.batchOn != "*" || !ss.batchWrote {
		return nil
	}
	ss.tx = ss.newTx(true, "")
	ss.extTx = true
	if b := ss.batchConns[prev]; prevWrote && b != nil {
		// Until now the batch ran on prev alone.
		if err := bt.joinTx(b); err != nil {
			return err
		}
		ss.tx.wrote[prev] = true
	}
	return nil
}

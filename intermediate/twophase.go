package intermediate

import (
	"sort"
	"strings"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/sqlerr"
)

// Postgres refuses PREPARE TRANSACTION in a transaction that touched
// temporary tables, and a read over intermediate results inside a
// client's transaction creates its temporary tables on the coordinator's
// connection of that transaction. A transaction that wrote on the
// coordinator's cluster and on another one commits in two phases, the
// coordinator among the prepared: its COMMIT would fail. The two checks
// below refuse the statement that would make it so, before it runs.

// CheckReadInTx refuses a read over intermediate results inside a
// transaction that wrote on the clusters wrote, when they include the
// coordinator coord and another cluster.
func CheckReadInTx(coord string, wrote map[string]bool) error {
	if !wrote[coord] || len(wrote) < 2 {
		return nil
	}
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"shardgate cannot read over intermediate results in a transaction that wrote on %s", clusterList(wrote)).
		WithDetail("The read creates temporary tables on the coordinator %s, and Postgres cannot PREPARE TRANSACTION (two-phase commit) after that.", coord).
		WithHint("Run the read before the writes, outside the transaction, or in a transaction that writes on one cluster.")
}

// MarkWrites records in wrote the clusters adding a write of a
// transaction goes to, or refuses the write when the transaction read
// over intermediate results on the coordinator pulledOn ("": none) and
// the write would make it commit in two phases with the coordinator among
// the prepared.
func MarkWrites(pulledOn string, wrote map[string]bool, adding []string) error {
	if err := checkWriteInTx(pulledOn, wrote, adding); err != nil {
		return err
	}
	for _, c := range adding {
		wrote[c] = true
	}
	return nil
}

// MarkConnWrites is MarkWrites of the clusters of conns that are the
// transaction's own connections (txConns, by cluster).
func MarkConnWrites(pulledOn string, wrote map[string]bool, txConns map[string]*backend.Conn, conns []*backend.Conn) error {
	var cs []string
	for _, b := range conns {
		if txConns[b.Cluster()] == b {
			cs = append(cs, b.Cluster())
		}
	}
	return MarkWrites(pulledOn, wrote, cs)
}

func checkWriteInTx(pulledOn string, wrote map[string]bool, adding []string) error {
	if pulledOn == "" {
		return nil
	}
	all := map[string]bool{}
	for c := range wrote {
		all[c] = true
	}
	for _, c := range adding {
		all[c] = true
	}
	if !all[pulledOn] || len(all) < 2 {
		return nil
	}
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"shardgate cannot write on %s in a transaction that read over intermediate results", clusterList(all)).
		WithDetail("The read created temporary tables on the coordinator %s, and Postgres cannot PREPARE TRANSACTION (two-phase commit) after that.", pulledOn).
		WithHint("Run the read outside the transaction, or after its writes in a separate one; after such a read a transaction may write on the coordinator's cluster alone, or on other clusters only.")
}

// clusterList names the clusters of set, sorted.
func clusterList(set map[string]bool) string {
	var cs []string
	for c := range set {
		cs = append(cs, c)
	}
	sort.Strings(cs)
	return strings.Join(cs, ", ")
}

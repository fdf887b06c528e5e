package gsi

import (
	"context"
	"fmt"
	"time"

	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// Added returns next's backfilling indexes that old does not have by
// name (every backfilling index when old is nil: a proxy starting).
func Added(old, next *vschema.VSchema) []*vschema.SecondaryIndex {
	had := map[string]bool{}
	if old != nil {
		for _, si := range old.SecondaryIndexes() {
			had[si.Name] = true
		}
	}
	var out []*vschema.SecondaryIndex
	for _, si := range next.SecondaryIndexes() {
		if !si.Active && !had[si.Name] {
			out = append(out, si)
		}
	}
	return out
}

// CreateTimeout bounds CreateLookupTables on one cluster.
const CreateTimeout = 10 * time.Second

// CreateLookupTables creates the lookup tables of indexes (IF NOT
// EXISTS) on the clusters of topo where their owner table exists, so
// that writes to an owner table that has rows keep working as soon as a
// backfilling index on it is in force: the proxies maintain its entries
// from then on, and the backfill fills in the rows written before. Where
// the owner table does not exist yet, its CREATE TABLE through the proxy
// creates the lookup table.
func CreateLookupTables(topo *topology.Topology, indexes []*vschema.SecondaryIndex) error {
	byCluster := map[string][]*vschema.SecondaryIndex{}
	var order []string
	for _, si := range indexes {
		for _, c := range si.Group.Clusters {
			if byCluster[c] == nil {
				order = append(order, c)
			}
			byCluster[c] = append(byCluster[c], si)
		}
	}
	for _, c := range order {
		if err := createOn(topo, c, byCluster[c]); err != nil {
			return fmt.Errorf("cluster %s: create the lookup tables of new secondary indexes: %w", c, err)
		}
	}
	return nil
}

func createOn(topo *topology.Topology, cluster string, indexes []*vschema.SecondaryIndex) error {
	ctx, cancel := context.WithTimeout(context.Background(), CreateTimeout)
	defer cancel()
	conn, err := connect(ctx, topo, cluster)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, si := range indexes {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", ownerName(si.Table)).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			continue
		}
		// Another proxy may create it at the same moment: CREATE TABLE
		// IF NOT EXISTS may then fail on the catalog's unique index
		// once; the second try sees the table.
		for try := 0; ; try++ {
			_, err := conn.Exec(ctx, CreateSQL(si, true))
			if err == nil {
				break
			}
			if try == 1 {
				return fmt.Errorf("%s: %w", si.Name, err)
			}
		}
	}
	return nil
}

package ecommerce

import (
	_ "embed"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// TopologyYAML is topology.yaml: clusters pg0 and pg1 on 127.0.0.1:5441 and
// :5442, database shop; groups main, by_customer and catalog.
//
//go:embed topology.yaml
var TopologyYAML string

// Topology4YAML is topology-4.yaml: TopologyYAML after a reshard of
// by_customer into four shards, on clusters pg2..pg5 (databases shop_2 and
// shop_3 next to pg0's, shop_4 and shop_5 next to pg1's).
//
//go:embed topology-4.yaml
var Topology4YAML string

// SchemaSQL is schema.sql: the DDL of the sharded groups, one section per
// group opened by a "-- @group NAME" line. A section runs on every cluster
// of its group; GroupSchema returns one section.
//
//go:embed schema.sql
var SchemaSQL string

// MainSchemaSQL is schema_main.sql: the DDL that runs on the main group's
// cluster only (the sequences).
//
//go:embed schema_main.sql
var MainSchemaSQL string

// Database is the database name the example's DSNs use.
const Database = "shop"

// DemoPorts returns the ports of pg0 and pg1 in TopologyYAML, in order.
func DemoPorts() []int { return []int{5441, 5442} }

// groupMarker opens a section of SchemaSQL.
var groupMarker = regexp.MustCompile(`(?m)^-- @group ([A-Za-z0-9_]+)[ \t]*$`)

// SchemaGroups returns the sharded groups that have a section in SchemaSQL,
// in file order: by_customer, catalog.
func SchemaGroups() []string {
	var out []string
	for _, m := range groupMarker.FindAllStringSubmatch(SchemaSQL, -1) {
		out = append(out, m[1])
	}
	return out
}

// GroupSchema returns the DDL to run on every cluster of group: for "main",
// MainSchemaSQL; for a sharded group, its section of SchemaSQL (from its
// marker line to the next one). It returns "" for an unknown group.
// Every statement is idempotent (IF NOT EXISTS).
func GroupSchema(group string) string {
	if group == "main" {
		return MainSchemaSQL
	}
	locs := groupMarker.FindAllStringSubmatchIndex(SchemaSQL, -1)
	for i, loc := range locs {
		if SchemaSQL[loc[2]:loc[3]] != group {
			continue
		}
		end := len(SchemaSQL)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		return SchemaSQL[loc[0]:end]
	}
	return ""
}

// clusterLine matches a cluster entry of TopologyYAML: `  pg0: { dsn: "..." }`.
var clusterLine = regexp.MustCompile(`(?m)^(\s+)([A-Za-z0-9_]+)(: \{ dsn: )"[^"]*"( \})`)

// TopologyFor returns TopologyYAML with the DSNs of the named clusters
// replaced, e.g. with testenv clusters on free ports:
//
//	ecommerce.TopologyFor(map[string]string{"pg0": env.Clusters[0].DSN("shop"), "pg1": env.Clusters[1].DSN("shop")})
//
// Clusters not named keep their DSN. Naming a cluster the file does not
// have is an error.
func TopologyFor(dsns map[string]string) (string, error) {
	return withDSNs(TopologyYAML, dsns)
}

// Topology4For is TopologyFor of Topology4YAML.
func Topology4For(dsns map[string]string) (string, error) {
	return withDSNs(Topology4YAML, dsns)
}

// withDSNs returns yaml with the DSNs of the named clusters replaced.
func withDSNs(yaml string, dsns map[string]string) (string, error) {
	seen := map[string]bool{}
	out := clusterLine.ReplaceAllStringFunc(yaml, func(line string) string {
		m := clusterLine.FindStringSubmatch(line)
		dsn, ok := dsns[m[2]]
		if !ok {
			return line
		}
		seen[m[2]] = true
		return m[1] + m[2] + m[3] + strconv.Quote(dsn) + m[4]
	})
	var unknown []string
	for name := range dsns {
		if !seen[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return "", fmt.Errorf("ecommerce: topology has no cluster named %s", strings.Join(unknown, ", "))
	}
	return out, nil
}

package topoinit

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/topology"
)

// Options name the one cluster the rendered topology has.
type Options struct {
	Cluster string // the cluster's name in the file; "pg0" when empty
	DSN     string // the cluster's DSN, written as given
}

// Render writes the starting topology for s: the cluster, the main group
// on it listing every table and every sequence, and the suggestions of
// Suggest as comments.
func Render(s *Schema, opts Options) string {
	cluster := opts.Cluster
	if cluster == "" {
		cluster = "pg0"
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# A starting shardgate topology for database %s, written by", strconv.Quote(s.Database))
	w("# `shardgate topology init` from the live database: %d tables, %d sequences.", len(s.Tables), len(s.Sequences))
	w("#")
	w("# Every table is in the main group, on one cluster, so the application")
	w("# works through the proxy as it did against the database (tables created")
	w("# later, and any the file does not name, are main's too). Sharding a table")
	w("# means moving it into a sharded group and moving its rows: this file")
	w("# does not move rows, and a reload that would route a table elsewhere")
	w("# is refused unless the table is empty there.")
	sugs := Suggest(s)
	if len(sugs) > 0 {
		w("# Suggested shard groups are at the end.")
	}
	w("version: 1")
	w("")
	w("clusters:")
	w("  %s: { dsn: %s }", yamlScalar(cluster), strconv.Quote(opts.DSN))
	w("")
	w("groups:")
	w("  main:")
	w("    unsharded: true")
	w("    cluster: %s", yamlScalar(cluster))
	if len(s.Tables) > 0 {
		w("    tables:")
		for _, t := range s.Tables {
			w("      - %s", yamlScalar(display(t.Name)))
		}
	}
	if len(s.Sequences) > 0 {
		w("    # Sequences live on main; INSERTs into sharded tables draw ids from")
		w("    # them in blocks, so ids stay unique across shards.")
		w("    sequences:")
		for _, sq := range s.Sequences {
			line := "      - " + yamlScalar(display(sq.Name))
			if sq.OwnedBy != nil {
				line += "  # " + display(*sq.OwnedBy) + "." + sq.Column
			}
			w("%s", line)
		}
	}
	if len(sugs) == 0 {
		return b.String()
	}
	w("")
	w("# Suggested shard groups, guessed from the schema (comments only).")
	w("# To use one: uncomment it under groups:, take its tables out of main's")
	w("# list, spread its shards over more clusters (\"-80\": pg0, \"80-\": pg1),")
	w("# and move the rows. A sharded table's primary and unique keys must")
	w("# contain its key column; sequences its inserts draw from stay on main.")
	for _, sg := range sugs {
		w("#")
		for _, l := range wrap(sg.Reason, 72) {
			w("# %s", l)
		}
		for _, l := range suggestionYAML(sg, cluster) {
			w("# %s", l)
		}
	}
	return b.String()
}

// suggestionYAML is a suggestion as the lines of a group under groups:.
func suggestionYAML(sg Suggestion, cluster string) []string {
	lines := []string{
		"  " + sg.Group + ":",
		fmt.Sprintf("    index: { name: %s, column: %s, type: %s, function: xxhash }", sg.Group, yamlScalar(sg.Column), sg.Type),
		fmt.Sprintf("    shards: { \"-\": %s }", yamlScalar(cluster)),
		"    tables:",
	}
	for _, m := range sg.Members {
		attrs := "{}"
		if m.Column != sg.Column {
			attrs = "{ column: " + yamlScalar(m.Column) + " }"
		}
		lines = append(lines, fmt.Sprintf("      %s: %s", yamlScalar(display(m.Table)), attrs))
	}
	return lines
}

// display spells a name as the topology file does: bare in public,
// schema-qualified elsewhere, quoted where SQL needs quotes.
func display(n Name) string {
	q := topology.QualifiedName{Schema: n.Schema, Name: n.Name}
	if n.Schema == topology.DefaultSchema {
		return keyexpr.QuoteIdentifier(n.Name)
	}
	return q.String()
}

var plainScalar = regexp.MustCompile(`^[a-z_][a-z0-9_.$]*$`)

// yamlScalar writes s bare when YAML reads it back as the same string,
// double-quoted otherwise.
func yamlScalar(s string) string {
	switch s {
	case "null", "true", "false", "yes", "no", "on", "off", "y", "n":
		return strconv.Quote(s)
	}
	if plainScalar.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

// wrap cuts text into lines of at most width bytes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

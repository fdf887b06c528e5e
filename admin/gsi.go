package admin

import (
	"context"
	"fmt"
	"strconv"

	"github.com/shardgate/shardgate/gsi"
)

// backfill starts the backfill of a global secondary index in the
// background of this proxy (as `shardgate gsi backfill` does): it answers
// once the runner holds its lock, and SHOW GSI follows its progress.
func (c *console) backfill(name string) error {
	topo := c.src.Routing().Topology
	log := c.log.With("gsi", name)
	b, err := gsi.Open(context.Background(), topo, name, true, gsi.Options{
		Logf:     func(format string, a ...any) { log.Info("gsi backfill: " + fmt.Sprintf(format, a...)) },
		Activate: true,
		File:     c.src.Routing().File,
		Author:   c.user,
	})
	if err != nil {
		return err
	}
	log.Info("admin console: GSI BACKFILL", "user", c.user)
	go func() {
		defer b.Close()
		if err := b.Run(context.Background()); err != nil {
			log.Error("gsi backfill stopped", "err", err)
		}
	}()
	return nil
}

var gsiCols = []string{"group", "name", "table", "column", "type", "state", "origin", "backfill", "rows_done", "rows_total", "rows_per_sec", "eta_seconds", "last_error"}

// showGSI lists the secondary indexes the topology declares, with the
// state in force and where it comes from (the file or a routing revision),
// and their backfill's progress as main
// records it (NULL if none ran).
func showGSI(c *console) ([][]*string, error) {
	r := c.src.Routing()
	progress := map[string][]gsi.OwnerStatus{}
	if main := r.Topology.Main(); main != nil {
		p := r.Pools[main.Cluster]
		exists, err := query(p, "SELECT to_regclass('shardgate.gsi_backfills') IS NOT NULL")
		if err != nil {
			return nil, err
		}
		if len(exists) == 1 && string(exists[0][0]) == "t" {
			res, err := query(p, `SELECT index_name, owner, phase, rows_done, rows_estimate, rate, eta, last_error FROM (`+gsi.StatusSQL+`) s(index_name, owner, phase, last_key, rows_done, rows_estimate, batches, started_at, updated_at, last_error, duplicates, rate, eta)`)
			if err != nil {
				return nil, err
			}
			for _, row := range res {
				st := gsi.OwnerStatus{Index: string(row[0]), Owner: string(row[1]), Phase: string(row[2]), LastError: string(row[7])}
				st.RowsDone, _ = strconv.ParseInt(string(row[3]), 10, 64)
				st.RowsEstimate, _ = strconv.ParseInt(string(row[4]), 10, 64)
				st.RowsPerSec, _ = strconv.ParseFloat(string(row[5]), 64)
				st.ETASeconds, _ = strconv.ParseFloat(string(row[6]), 64)
				progress[st.Index] = append(progress[st.Index], st)
			}
		}
	}
	var rows [][]*string
	for _, g := range r.Topology.Groups {
		for _, si := range g.SecondaryIndexes {
			row := []*string{str(g.Name), str(si.Name), str(si.Table.String()), str(si.Indexed()), str(si.Types()), str(si.State),
				origin(r.Topology, "groups."+g.Name+".secondary_indexes."+si.Name)}
			st := progress[si.Name]
			if len(st) == 0 {
				rows = append(rows, append(row, nil, nil, nil, nil, nil, nil))
				continue
			}
			var done, total int64
			var rate, eta float64
			lastErr := ""
			for _, s := range st {
				done += s.RowsDone
				total += max(s.RowsEstimate, s.RowsDone)
				rate += s.RowsPerSec
				eta = max(eta, s.ETASeconds)
				if s.LastError != "" {
					lastErr = s.LastError
				}
			}
			rows = append(rows, append(row, str(gsi.IndexPhase(st)), num(done), num(total),
				str(strconv.FormatFloat(rate, 'f', 0, 64)), str(strconv.FormatFloat(eta, 'f', 1, 64)), nullable(lastErr)))
		}
	}
	return rows, nil
}

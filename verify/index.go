package verify

import (
	"context"
	"time"

	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/vschema"
)

// An index is checked by package gsi's own verify (counts and checksums
// per lookup cluster, the entries that differ settled under lock), over
// the routing in force; repairing is gsi's repair. It is one step: a run
// interrupted during it verifies the index again.

func indexRunner(si *vschema.SecondaryIndex) func(context.Context, *verifier, *Unit) error {
	return func(ctx context.Context, v *verifier, u *Unit) error {
		start := time.Now()
		b, err := gsi.Open(ctx, v.topo, si.Name, false, gsi.Options{})
		if err != nil {
			return err
		}
		defer b.Close()
		res, err := b.Verify(ctx, v.opts.Repair)
		if err != nil {
			return err
		}
		var entries int64
		for _, r := range res {
			entries += r.Entries
			u.Found += int64(r.Missing + r.Extra + r.Wrong + r.Duplicate)
			if r.Repaired {
				u.Repaired += int64(r.Missing + r.Extra + r.Wrong)
			}
			for _, d := range r.Diffs {
				f := Finding{Key: d.Value + " on " + r.Cluster, Detail: d.String()}
				f.Repaired = r.Repaired && d.Kind != gsi.DiffDuplicate
				if r.Repaired && !f.Repaired {
					f.Detail += ": not repairable: remove the rows"
				}
				if len(u.Samples) < maxSamples {
					u.Samples = append(u.Samples, f)
				}
			}
		}
		return v.chunkDone(ctx, u, entries, time.Since(start), nil)
	}
}

package planner

import "strings"

// Distinct removes duplicate rows across shards (each shard already ran
// DISTINCT or DISTINCT ON itself).
//
//   - On empty: SELECT DISTINCT. Rows are equal when every visible column
//     is. Over a MergeSort (Sorted), duplicates can only sit in one run of
//     rows with equal sort keys, so only that run is remembered; otherwise
//     (no ORDER BY, or over an Aggregate) every distinct row is.
//   - On set: SELECT DISTINCT ON (On...). The first row of each key is
//     kept. Over a MergeSort (whose keys start with the ON expressions, as
//     Postgres requires), equal keys are adjacent and the first one is
//     the one ORDER BY puts first; otherwise one row per key is kept.
type Distinct struct {
	Input  Primitive
	On     []int // columns of the DISTINCT ON expressions (negative: hidden, see SortKey)
	Sorted bool  // the input is a MergeSort
}

// Name implements Primitive.
func (d *Distinct) Name() string { return "Distinct" }

// Inputs implements Primitive.
func (d *Distinct) Inputs() []Primitive { return []Primitive{d.Input} }

func (d *Distinct) mode() RouteMode { return ModeMerge }

func (d *Distinct) targets(pl *Plan, params []Param) ([]Target, error) {
	return d.Input.targets(pl, params)
}

func (d *Distinct) explain(w *explainWriter, pl *Plan, depth int) {
	s := "Distinct"
	if d.On != nil {
		cols := make([]string, len(d.On))
		for i, c := range d.On {
			cols[i] = columnName(c)
		}
		s += " on=(" + strings.Join(cols, ", ") + ")"
	}
	if d.Sorted {
		s += " sorted"
	} else {
		s += " hashed"
	}
	w.line(depth, "%s", s)
	d.Input.explain(w, pl, depth+1)
}

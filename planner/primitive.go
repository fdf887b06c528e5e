package planner

import "fmt"

// Primitive is one node of a plan tree. The set is closed (the methods that
// execute are unexported): the leaves Route, InsertSplit, DDLSplit, TxControl,
// SessionSet, ProxyLocal, CursorOp, CopyIn (and the wrappers of their own packages'
// files), and the merge primitives MergeSort, Aggregate, Sort, Distinct
// and Limit, and CopyOut, whose Inputs end in one Route.
type Primitive interface {
	// Name is the primitive's name as EXPLAIN prints it.
	Name() string
	// Inputs lists the primitives whose results this one consumes; nil
	// for leaves.
	Inputs() []Primitive

	mode() RouteMode
	targets(pl *Plan, params []Param) ([]Target, error)
	explain(w *explainWriter, pl *Plan, depth int)
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

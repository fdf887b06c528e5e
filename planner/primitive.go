package planner

import "fmt"

// Primitive is one node of a plan tree. The set is closed (the methods that
// execute are unexported): Route, InsertSplit, TxControl, SessionSet and
// ProxyLocal today; MergeSort, Aggregate and Limit slot in as primitives
// whose Inputs are Routes.
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

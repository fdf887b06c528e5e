package planner

// Sort orders the rows of its input (an Aggregate's groups) in memory:
// memory is bounded by the number of groups.
type Sort struct {
	Input Primitive
	Keys  []SortKey
}

// Name implements Primitive.
func (s *Sort) Name() string { return "Sort" }

// Inputs implements Primitive.
func (s *Sort) Inputs() []Primitive { return []Primitive{s.Input} }

func (s *Sort) mode() RouteMode { return ModeMerge }

func (s *Sort) targets(pl *Plan, params []Param) ([]Target, error) {
	return s.Input.targets(pl, params)
}

func (s *Sort) explain(w *explainWriter, pl *Plan, depth int) {
	w.line(depth, "Sort keys=%s", sortKeysString(s.Keys))
	s.Input.explain(w, pl, depth+1)
}

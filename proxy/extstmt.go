package proxy

// Client statements across reloads.

// replan plans st again when the topology was reloaded since it was
// planned (each reload makes a new planner): a statement Parsed before the
// reload runs where the new topology says.
func (bt *batch) replan(st *clientStmt) error {
	if st.planner == bt.r.planner {
		return nil
	}
	plan, err := bt.r.planner.Plan(st.sql)
	if err != nil {
		return err
	}
	st.plan, st.planner = plan, bt.r.planner
	return nil
}

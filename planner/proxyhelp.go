package planner

// Questions the proxy asks of a plan before it runs it.

// CopyRun reports whether the plan is a COPY that the proxy splits or
// merges across clusters (CopyIn, CopyOut), rather than relays.
func (pl *Plan) CopyRun() bool {
	switch pl.Root.(type) {
	case *CopyIn, *CopyOut:
		return true
	}
	return false
}

// WritesGSI reports whether the plan writes the lookup tables of global
// secondary indexes beside its own statement (Plan.GSI, or COPY FROM into
// a table with indexes): the proxy runs it in a transaction, however
// many clusters its own statement has.
func (pl *Plan) WritesGSI() bool {
	if ci, ok := pl.Root.(*CopyIn); ok && len(ci.Indexes) > 0 {
		return true
	}
	return pl.GSI != nil
}

// OneCluster names the cluster of a plan that can run on one cluster
// only (a Route over a group of one cluster, such as main).
func (pl *Plan) OneCluster() (string, bool) {
	r, ok := pl.Root.(*Route)
	if !ok || len(r.Group.Clusters) != 1 {
		return "", false
	}
	return r.Group.Clusters[0], true
}

// ChangesState says whether a successful statement changes settings the
// session tracks or transaction-local ones.
func (pl *Plan) ChangesState() bool {
	switch pl.Kind {
	case Set, Reset, Discard:
		return true
	}
	return len(pl.Settings) > 0 || len(pl.TxLocal) > 0
}

// RunsInSteps says whether the proxy runs pl itself rather than binding it
// on a backend: plans it answers (ModeProxy) and reads over intermediate
// results, which run in steps at Execute.
func RunsInSteps(pl *Plan) bool {
	return pl.Mode() == ModeProxy || pl.Mode() == ModeIntermediate
}

// ReadOf is the read a plan run in steps makes: a write's source
// (InsertSelect.Source, RowWrite.Source or MergeSource.Source, true) or the plan itself.
func ReadOf(pl *Plan) (*Plan, bool) {
	switch x := pl.Root.(type) {
	case *InsertSelect:
		return x.Source, true
	case *RowWrite:
		return x.Source, true
	case *MergeSource:
		return x.Source, true
	}
	return pl, false
}

// NoRows reports whether the statement never returns rows: a write
// without RETURNING, or DDL. An Execute's row limit means nothing to it
// ("maximum number of rows to return, if portal contains a query that
// returns rows (ignored otherwise)"); pgjdbc sends a limit of 1 with every
// executeUpdate and batch.
func (pl *Plan) NoRows() bool {
	switch pl.Kind {
	case Insert, Update, Delete, Merge:
		return !pl.Returns
	case DDL:
		return true
	}
	return false
}

package merge

import (
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
)

// RunQueries runs the merge with the simple protocol: every target's
// statement (targets[i].SQL, or sql) is sent to conns[i] as a Query at
// once, describe is given the merged columns once every shard described
// its rows, and the merged rows stream to e.Client. It returns the number
// of rows sent, or -1 when a shard failed before describing its rows (its
// reader reported the error: the result of Finish is returned); every
// shard's answer has been read to its end.
func (e *Exec) RunQueries(sql string, targets []planner.Target, conns []*backend.Conn, describe func([]pgproto3.FieldDescription) error) (int64, error) {
	if err := CheckLimit(e.Plan.Root, e.Params); err != nil {
		return 0, err
	}
	if err := sendQueries(sql, targets, conns); err != nil {
		return 0, err
	}
	for i, b := range conns {
		e.Streams = append(e.Streams, NewStream(b, targets[i], true, nil))
	}
	e.Set = NewStreamSet(e.Streams, true)
	e.Set.Start()
	for _, s := range e.Streams {
		if err := s.AwaitDesc(); err != nil {
			// The reader reported it: the first error has cancelled the
			// other shards already.
			return -1, e.Finish(false)
		}
	}
	err := e.Build()
	if fb := Fallback(e.Plan, err); fb != nil {
		// The shards' answers are read to their end (a cancel would
		// abort the client's transaction), then the plan's fallback runs.
		if ferr := e.Finish(true); ferr != nil {
			return -1, ferr
		}
		return -1, &NeedsFallback{Plan: fb, Cause: err}
	}
	if err == nil {
		err = describe(e.Fields())
	}
	var n int64
	if err == nil {
		n, err = e.Stream()
	}
	if err != nil {
		e.Set.Fail(err) // stop the shards still running
	}
	if ferr := e.Finish(false); ferr != nil {
		err = ferr
	}
	return n, err
}

// sendQueries sends each target's statement (its own SQL, else sql) as a
// simple Query on its connection.
func sendQueries(sql string, targets []planner.Target, conns []*backend.Conn) error {
	for i, b := range conns {
		q := targets[i].SQL
		if q == "" {
			q = sql
		}
		if err := SendQuery(b, q); err != nil {
			return err
		}
	}
	return nil
}

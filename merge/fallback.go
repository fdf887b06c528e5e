package merge

import (
	"errors"

	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// NeedsFallback is the answer of a merge that cannot be computed for the
// column types the shards returned, found before any row was sent: the
// caller runs Plan (over intermediate results) instead.
type NeedsFallback struct {
	Plan  *planner.Plan
	Cause error
}

func (n *NeedsFallback) Error() string { return n.Cause.Error() }

// Fallback returns the plan that replaces a merge of plan whose pipeline
// failed to build with err, or nil: only what the merge refuses as not
// supported (0A000) falls back, and only for a plan that has a fallback.
func Fallback(plan *planner.Plan, err error) *planner.Plan {
	if err == nil || sqlerr.Code(err) != sqlerr.FeatureNotSupported {
		return nil
	}
	return plan.Fallback()
}

// FallbackOf returns the plan of a NeedsFallback error, or nil.
func FallbackOf(err error) *planner.Plan {
	if err == nil {
		return nil // the hot path: errors.As would allocate its target
	}
	var n *NeedsFallback
	if errors.As(err, &n) {
		return n.Plan
	}
	return nil
}

// BuildDescribed is Build for streams described by Describe of their
// shard portals (extended protocol): each must have its description.
func (e *Exec) BuildDescribed() error {
	for _, s := range e.Streams {
		if !s.Described() {
			return sqlerr.New(sqlerr.InternalError, "no description of the shard statement on cluster %s", s.b.Cluster())
		}
	}
	return e.Build()
}

// CanBuild returns the fallback plan of a merge of described streams
// (BuildDescribed) that cannot be built, or nil: the merge is built, or
// reports its own error.
func (e *Exec) CanBuild() *planner.Plan {
	return Fallback(e.Plan, e.BuildDescribed())
}

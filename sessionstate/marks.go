package sessionstate

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
)

// MarkSettingsChange forgets which session settings connections carry when
// a statement changes them: the connection is replayed to whatever session
// it serves next, so a SET never leaks to another client.
func MarkSettingsChange(plan *planner.Plan, conns []*backend.Conn) {
	switch {
	case plan.Kind == planner.Set, plan.Kind == planner.Reset, len(plan.Settings) > 0:
	case plan.DiscardAll:
		for _, b := range conns {
			// DISCARD ALL drops the backend's prepared statements too.
			b.Prepared = map[string]string{}
		}
	default:
		return
	}
	for _, b := range conns {
		b.SettingsKey = ""
	}
}

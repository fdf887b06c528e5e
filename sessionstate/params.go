package sessionstate

import (
	"maps"
	"sync"
)

// ParamSets lets sessions that hold the same parameters (the
// ParameterStatus values they saw, their start-up parameters) share one
// map: an idle client then costs no map of its own. A shared map is read
// only; a session changes its own ParameterStatus set with WithParam.
type ParamSets struct {
	mu   sync.Mutex
	last map[string]string
}

// Share returns a map equal to m: the one handed out before when equal,
// else m, which is handed out from then on.
func (p *ParamSets) Share(m map[string]string) map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last != nil && maps.Equal(p.last, m) {
		return p.last
	}
	p.last = m
	return m
}

// WithParam returns a copy of m (which may be shared) with name set to
// value.
func WithParam(m map[string]string, name, value string) map[string]string {
	c := maps.Clone(m)
	if c == nil {
		c = map[string]string{}
	}
	c[name] = value
	return c
}

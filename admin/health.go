package admin

import (
	"sync"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/sqlerr"
)

// Readiness is what /readyz answers: whether the proxy can serve, and
// what is not ready when it cannot.
type Readiness struct {
	Ready    bool   `json:"ready"`
	Revision int    `json:"revision"` // the routing revision in force; 0: no topology
	Draining bool   `json:"draining,omitempty"`
	Main     string `json:"main"` // the state of the main group's cluster
	// Clusters are each cluster's state: up, busy (every connection lent:
	// it answers, the probe did not wait for one), paused (the console's
	// PAUSE: statements wait, they do not fail) or down: the error.
	Clusters map[string]string `json:"clusters"`
	// NotReady lists why Ready is false, one line each.
	NotReady []string `json:"not_ready,omitempty"`
}

// CheckReady probes every cluster of src's topology at once with SELECT 1
// on a pooled connection, never waiting for one: ready when a topology is
// in force, the proxy is not draining and no cluster is down (a paused
// one is ready: its statements wait for RESUME).
func CheckReady(src Source, draining bool) Readiness {
	r := src.Routing()
	out := Readiness{Ready: true, Draining: draining, Clusters: map[string]string{}}
	if r.Topology == nil || r.Planner == nil {
		return Readiness{Main: "unknown", Clusters: out.Clusters, NotReady: []string{"no topology loaded"}}
	}
	out.Revision = r.Revision
	if draining {
		out.Ready = false
		out.NotReady = append(out.NotReady, "draining: shutting down")
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, cl := range r.Topology.Clusters {
		p := r.Pools[cl.Name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			state := probe(p)
			mu.Lock()
			out.Clusters[cl.Name] = state
			mu.Unlock()
		}()
	}
	wg.Wait()
	main := ""
	if vs := r.Planner.VSchema(); vs != nil && vs.Main() != nil && len(vs.Main().Clusters) > 0 {
		main = vs.Main().Clusters[0]
	}
	out.Main = out.Clusters[main]
	for _, cl := range r.Topology.Clusters {
		if s := out.Clusters[cl.Name]; isDown(s) {
			out.Ready = false
			what := "cluster " + cl.Name
			if cl.Name == main {
				what = "main cluster " + cl.Name
			}
			out.NotReady = append(out.NotReady, what+" is "+s)
		}
	}
	return out
}

func isDown(state string) bool { return state != "up" && state != "busy" && state != "paused" }

// probe is a cluster's state (Readiness.Clusters).
func probe(p *backend.Pool) string {
	if p == nil {
		return "down: no connection pool"
	}
	if p.Info().Paused {
		return "paused"
	}
	b, err := p.TryAcquire()
	if err != nil {
		if sqlerr.Code(err) == "57014" || sqlerr.Code(err) == "53300" {
			return "busy" // exhausted: its connections are all lent
		}
		return "down: " + err.Error()
	}
	defer b.Release()
	if _, err := b.Query("SELECT 1"); err != nil {
		return "down: " + err.Error()
	}
	return "up"
}

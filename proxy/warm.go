package proxy

import "sync"

// WarmClusters opens connections to the named clusters before a switch
// releases writes onto them (the gate's OnArm): each pool gets as many as
// the busiest pool of the routing in force has open, at most its size, so
// the statements released there do not dial them then.
func (s *Server) WarmClusters(names []string) {
	r := s.cur.Load()
	n := 0
	for _, p := range r.pools {
		open, _ := p.Stats()
		n = max(n, open)
	}
	var wg sync.WaitGroup
	for _, name := range names {
		if p := r.pools[name]; p != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.Warm(n)
			}()
		}
	}
	wg.Wait()
}

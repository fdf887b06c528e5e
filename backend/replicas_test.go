package backend

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

func TestParseLSN(t *testing.T) {
	for s, want := range map[string]uint64{"0/0": 0, "0/16B3748": 0x16B3748, "1/0": 1 << 32, "FF/FFFFFFFF": 0xFFFFFFFFFF} {
		if got, err := ParseLSN(s); err != nil || got != want {
			t.Errorf("ParseLSN(%q) = %x, %v; want %x", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "x/1", "1/100000000"} {
		if _, err := ParseLSN(s); err == nil {
			t.Errorf("ParseLSN(%q) accepted", s)
		}
	}
}

// TestReplicaSetHealth runs the checker against real streaming standbys:
// both are chosen while they keep up; one applying commits two seconds
// late is skipped while it lags more than max_lag (500ms) and taken back
// once it replayed; a stopped one is banned, the other chosen, and the
// stopped one taken back once it runs again.
func TestReplicaSetHealth(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{N: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg0 := env.Clusters[0]
	fast, err := pg0.StartStandby(ctx, testenv.StandbyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slow, err := pg0.StartStandby(ctx, testenv.StandbyOptions{ApplyDelay: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pool := func(dsn string) *Pool { return NewPool("pg0", dsn, 4, time.Second, time.Second, 0) }
	primary, fastPool, slowPool := pool(pg0.DSN("")), pool(fast.DSN("")), pool(slow.DSN(""))
	defer primary.Close()
	defer fastPool.Close()
	defer slowPool.Close()
	rs := NewReplicaSet("pg0", primary, []StandbyConfig{{Pool: fastPool}, {Pool: slowPool, Priority: 0}}, 500*time.Millisecond, 0, nil)
	rs.Check(ctx)
	for _, s := range rs.Standbys() {
		if st := s.State(); !st.Up || !st.InRecovery || !st.LagKnown || st.OverLag {
			t.Fatalf("%s: %+v", s.Pool.Host(), st)
		}
	}
	if st := rs.PrimaryState(); !st.Up || st.InRecovery {
		t.Fatalf("primary: %+v", st)
	}
	chosen := map[*Pool]bool{}
	for i := 0; i < 4; i++ {
		s, why := rs.Choose()
		if s == nil {
			t.Fatal(why)
		}
		chosen[s.Pool] = true
		c, err := s.Pool.Acquire(ctx) // busy: the next Choose takes the other
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
	}
	if !chosen[fastPool] || !chosen[slowPool] {
		t.Fatalf("the least busy standby was not chosen in turn: %v", chosen)
	}

	// A write: the delayed standby falls behind by more than 500ms.
	if err := pg0.Exec(ctx, "", "CREATE TABLE lag_probe (id int); INSERT INTO lag_probe VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	sawOver := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		rs.Check(ctx)
		st := rs.Standbys()[1].State()
		if st.OverLag {
			sawOver = true
			if s, _ := rs.Choose(); s == nil || s.Pool != fastPool {
				t.Fatalf("a lagging standby is chosen: %+v", st)
			}
		} else if sawOver {
			break // caught up again
		}
	}
	if !sawOver {
		t.Fatal("the delayed standby never showed over max_lag")
	}
	if st := rs.Standbys()[1].State(); st.OverLag {
		t.Fatalf("the delayed standby did not catch up: %+v", st)
	}
	if err := slow.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}

	// A stopped standby is banned; the other serves.
	if err := fast.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	rs.Check(ctx)
	if st := rs.Standbys()[0].State(); st.Up || st.Bans != 1 || !time.Now().Before(st.BannedUntil) {
		t.Fatalf("stopped standby: %+v", st)
	}
	for i := 0; i < 3; i++ {
		if s, why := rs.Choose(); s == nil || s.Pool != slowPool {
			t.Fatalf("chose %v (%s) with the fast standby stopped", s, why)
		}
	}
	if err := fast.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rs.Start()
	defer rs.Stop()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if st := rs.Standbys()[0].State(); st.Up {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted standby was not taken back: %+v", rs.Standbys()[0].State())
		}
	}
}

// TestChooseSpreadsUnderConcurrency: 8 goroutines each choose a standby,
// run a short read on it and give the connection back, 200 times, over
// two standby pools of a real cluster (both pools reach the same server:
// Choose sees only their pools); each pool serves within 2× of the
// other's count.
func TestChooseSpreadsUnderConcurrency(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{N: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := env.Clusters[0].DSN("")
	pool := func() *Pool { return NewPool("pg0", dsn, 8, 5*time.Second, 5*time.Second, 0) }
	primary, a, b := pool(), pool(), pool()
	defer primary.Close()
	defer a.Close()
	defer b.Close()
	rs := NewReplicaSet("pg0", primary, []StandbyConfig{{Pool: a}, {Pool: b}}, 0, 0, nil)
	const workers, rounds = 8, 200
	var mu sync.Mutex
	counts := map[*Pool]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				s, why := rs.Choose()
				if s == nil {
					errs <- errors.New(why)
					return
				}
				c, err := s.Pool.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				_, err = c.Query("SELECT pg_sleep(0.001)")
				c.Release()
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				counts[s.Pool]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	na, nb := counts[a], counts[b]
	t.Logf("reads per standby pool: %d and %d", na, nb)
	if na+nb != workers*rounds || na > 2*nb || nb > 2*na {
		t.Fatalf("reads did not spread: %d and %d", na, nb)
	}
}

// TestChooseCountsDials: a connection being dialed counts as busy. With
// one standby's postmaster frozen (SIGSTOP: the kernel accepts the
// connection, nothing answers), a lease of it hangs in its dial; while it
// does, Choose sends every read to the other standby instead of every
// other one (a dial was not counted: both looked idle, and ties went
// round).
func TestChooseCountsDials(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{N: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	free, frozen := env.Clusters[0], env.Clusters[1]
	pool := func(c *testenv.Cluster) *Pool { return NewPool(c.Name, c.DSN(""), 4, 5*time.Second, 5*time.Second, 0) }
	primary, a, b := pool(free), pool(free), pool(frozen)
	defer primary.Close()
	defer a.Close()
	defer b.Close()
	rs := NewReplicaSet("pg0", primary, []StandbyConfig{{Pool: a}, {Pool: b}}, 0, 0, nil)
	thaw, err := frozen.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	defer thaw()
	dialed := make(chan error, 1)
	go func() {
		c, err := b.Acquire(ctx)
		if err == nil {
			c.Release()
		}
		dialed <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b.mu.Lock()
		dialing := b.open > 0
		b.mu.Unlock()
		if dialing {
			break
		}
	}
	onFrozen := 0
	for range 10 {
		s, why := rs.Choose()
		if s == nil {
			t.Fatal(why)
		}
		if s.Pool == b {
			onFrozen++
		}
	}
	thaw()
	if err := <-dialed; err != nil {
		t.Logf("the frozen standby's dial: %v", err)
	}
	if onFrozen > 0 {
		t.Fatalf("%d of 10 reads chose the standby whose dial hangs", onFrozen)
	}
}

package backend

import (
	"context"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// BenchmarkLeaseRelease is the pool's part of every statement outside a
// transaction: lend an idle connection and take it back.
func BenchmarkLeaseRelease(b *testing.B) {
	env := testenv.Shared(b)
	p := NewPool("pg0", env.Clusters[0].DSN(""), 4, 5*time.Second, 5*time.Second, 0)
	defer p.Close()
	ctx := context.Background()
	c, err := p.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	p.Release(c)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := p.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Release(c)
	}
}

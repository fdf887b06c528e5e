package backend

import (
	"context"
	"testing"
	"time"
)

// BenchmarkLeaseRelease is the pool's part of every statement outside a
// transaction: lend an idle connection and take it back.
func BenchmarkLeaseRelease(b *testing.B) {
	p, c := lentPool(b, 4, 5*time.Second)
	ctx := context.Background()
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

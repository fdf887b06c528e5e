package pgwire

import (
	"fmt"
	"sync/atomic"
)

// Budget bounds the bytes client readers hold at once for messages larger
// than their pooled buffer, across every reader that shares it: one 60 MB
// Query is 60 MB of buffer, and a thousand clients sending one each at the
// same time would otherwise be 60 GB. A reader reserves a message's buffer
// before allocating it and gives it back when the buffer is dropped (the
// next message, Release or Close). Pooled buffers (ClientReadSize each)
// are not counted: the number of clients bounds them.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// InUse is how many bytes readers hold now.
func (b *Budget) InUse() int64 { return b.used.Load() }

// Limit is the budget's size.
func (b *Budget) Limit() int64 { return b.limit }

func (b *Budget) take(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *Budget) give(n int64) { b.used.Add(-n) }

// BudgetExceededErr is Receive's error for a message whose buffer the
// Budget cannot hold now. The message's body is still unread: Discard
// skips it.
type BudgetExceededErr struct {
	Size, InUse, Limit int64
}

func (e *BudgetExceededErr) Error() string {
	return fmt.Sprintf("a client message of %d bytes would exceed the %d bytes all client messages may hold at once (%d in use)", e.Size, e.Limit, e.InUse)
}

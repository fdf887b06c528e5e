package planner

import "sync"

// planCache is a bounded LRU of plans keyed by statement text. Plans are
// immutable, so a hit hands out the shared *Plan without copying. The bound
// is on entries and on the bytes of the keys, so a client sending huge
// one-off statements cannot grow the proxy without limit.
type planCache struct {
	mu         sync.Mutex
	entries    map[string]*cacheEntry
	head       cacheEntry // sentinel: head.next is the most recently used
	maxEntries int
	maxBytes   int
	bytes      int
}

// cacheEntry is one cached statement: its plan or the error planning it
// gave (errors are as deterministic as plans, and caching them keeps a
// client that retries a refused statement from paying a parse each time).
type cacheEntry struct {
	key        string
	plan       *Plan
	err        error
	prev, next *cacheEntry
	// columnsOf names the tables whose column order the plan (or the
	// error) was made with (columns.go).
	columnsOf []string
}

func newPlanCache(maxEntries, maxBytes int) *planCache {
	c := &planCache{entries: make(map[string]*cacheEntry), maxEntries: maxEntries, maxBytes: maxBytes}
	c.head.next, c.head.prev = &c.head, &c.head
	return c
}

// get returns the entry for key and marks it most recently used.
func (c *planCache) get(key string) (plan *Plan, err error, ok bool) {
	c.mu.Lock()
	e := c.entries[key]
	if e != nil {
		if c.head.next != e {
			c.unlink(e)
			c.pushFront(e)
		}
		plan, err = e.plan, e.err
	}
	c.mu.Unlock()
	return plan, err, e != nil
}

func (c *planCache) put(key string, plan *Plan, err error) {
	c.putUsing(key, plan, err, nil)
}

// putUsing is put for an entry made with the column order of the tables
// columnsOf.
func (c *planCache) putUsing(key string, plan *Plan, err error, columnsOf []string) {
	size := entrySize(key, plan)
	if size > c.maxBytes/4 {
		return // one statement may not evict a quarter of the cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		c.bytes -= entrySize(e.key, e.plan)
		e.plan, e.err, e.columnsOf = plan, err, columnsOf
		c.bytes += size
		c.unlink(e)
		c.pushFront(e)
	} else {
		e := &cacheEntry{key: key, plan: plan, err: err, columnsOf: columnsOf}
		c.entries[key] = e
		c.pushFront(e)
		c.bytes += size
	}
	for len(c.entries) > c.maxEntries || c.bytes > c.maxBytes {
		last := c.head.prev
		c.unlink(last)
		delete(c.entries, last.key)
		c.bytes -= entrySize(last.key, last.plan)
	}
}

// dropIf removes the entries drop reports.
func (c *planCache) dropIf(drop func(e *cacheEntry) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, e := range c.entries {
		if drop(e) {
			c.unlink(e)
			delete(c.entries, key)
			c.bytes -= entrySize(e.key, e.plan)
		}
	}
}

func (c *planCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// entrySize estimates an entry's memory: the key (the plan's SQL is the
// same string), a fixed overhead for the plan tree, and what a split
// INSERT keeps per row.
func entrySize(key string, plan *Plan) int {
	n := len(key) + 256
	if plan != nil {
		if s, ok := plan.Root.(*InsertSplit); ok {
			n += len(key) + 64*len(s.Rows)
		}
	}
	return n
}

func (c *planCache) unlink(e *cacheEntry) {
	e.prev.next = e.next
	e.next.prev = e.prev
}

func (c *planCache) pushFront(e *cacheEntry) {
	e.next = c.head.next
	e.prev = &c.head
	c.head.next.prev = e
	c.head.next = e
}

package server

import (
	"sync"
	"sync/atomic"
)

// throttle is the server-wide admission control ZooKeeper calls globalOutstandingLimit: it
// counts requests that were read and whose reply is not queued yet, and while that count is at
// or above the limit a connection that already has a request outstanding reads no more. The
// client sees latency, never an error; a connection with nothing outstanding is never held
// (each client keeps making progress, one request at a time), and a pipelining client cannot
// fill the server's queues: what is in flight stays near limit + number of connections.
//
// Held connections resume when the count has dropped to a tenth below the limit (resumeAt), not
// at the first answer: every resume wakes all held connections, and without that margin each
// answered request would wake them all to read one request each.
//
// Invariant: a waiter is woken once the count drops to resumeAt or its own connection has no
// request outstanding. Lost wake-ups are excluded by ordering: a waiter increments waiters
// before it re-reads the count; done decrements the count before it reads waiters, so at least
// one of them sees the other's change (sequentially consistent atomics).
type throttle struct {
	limit   int64 // <= 0: no limit
	n       atomic.Int64
	waiters atomic.Int64
	mu      sync.Mutex
	below   chan struct{} // closed (and reset) when the count drops to resumeAt
}

func (t *throttle) add() { t.n.Add(1) }

// resumeAt is the count at or below which held connections read again.
func (t *throttle) resumeAt() int64 { return t.limit - max(1, t.limit/10) }

func (t *throttle) done() {
	if t.n.Add(-1) <= t.resumeAt() && t.waiters.Load() > 0 {
		t.mu.Lock()
		if t.below != nil {
			close(t.below)
			t.below = nil
		}
		t.mu.Unlock()
	}
}

// outstanding returns the number of requests read and not yet answered.
func (t *throttle) outstanding() int64 { return t.n.Load() }

// full reports whether a connection with requests outstanding would wait at the gate now.
func (t *throttle) full() bool { return t.limit > 0 && t.n.Load() >= t.limit }

// wait blocks while the count is at or above the limit, until it drops to resumeAt, own is
// closed (the connection has nothing outstanding) or stop is closed. It reports whether it
// waited.
func (t *throttle) wait(own, stop <-chan struct{}) bool {
	if t.limit <= 0 || t.n.Load() < t.limit || own == nil {
		return false
	}
	t.waiters.Add(1)
	defer t.waiters.Add(-1)
	for {
		t.mu.Lock()
		if t.below == nil {
			t.below = make(chan struct{})
		}
		ch := t.below
		t.mu.Unlock()
		if t.n.Load() <= t.resumeAt() {
			return true
		}
		select {
		case <-ch:
		case <-own:
			return true
		case <-stop:
			return true
		}
	}
}

//go:build corraltesting

package router

import (
	"sync/atomic"
	"time"
)

// shardTestHooks and txnTestHooks are the router's test-only behaviours. They exist in
// corraltesting builds only (package internal/testknobs; `make test` builds with the tag, the
// server binary without it); in a production build they are empty and their methods do
// nothing (testhooks_off.go).
type shardTestHooks struct {
	lag atomic.Int64 // nanoseconds every apply of this replica is held back
}

type txnTestHooks struct {
	step func(step string)
}

// SetApplyLag makes this server's replica of a shard hold back every apply that changes
// something by d (0 turns it off). Tests use it to make one replica lag behind the others, as a
// slow disk or a loaded server would, so that the cross-shard read rule is actually exercised.
func (s *Shard) SetApplyLag(d time.Duration) { s.testHooks.lag.Store(int64(d)) }

// beforePublish holds an apply with events back by the lag.
func (h *shardTestHooks) beforePublish(events int) {
	if d := h.lag.Load(); d > 0 && events > 0 {
		time.Sleep(time.Duration(d))
	}
}

// SetTxnHook installs a function called at the steps of every transaction this server
// coordinates: "prepared" (a move prepared on both participants), "anchor-committed" (any
// transaction) and "cut-held" (a backup's cut prepared everywhere and its views taken, cut.go).
// Tests use it to stop a coordinator half-way.
func (r *Router) SetTxnHook(f func(step string)) { r.txn.testHooks.step = f }

func (h *txnTestHooks) at(step string) {
	if h.step != nil {
		h.step(step)
	}
}

//go:build corraltesting

package replica

import "time"

// testHooks are a replica's test-only behaviours. They exist in corraltesting builds only
// (package internal/testknobs; `make test` builds with the tag, the server binary without it);
// in a production build testHooks is empty and its methods do nothing (testhooks_off.go).
type testHooks struct {
	applyDelayPerOp time.Duration
}

// SetApplyDelayPerOp makes every Update of the replica take d per applied op before it
// publishes, simulating a shard whose apply is latency-bound (a slow disk or a single-threaded
// commit); shards apply in parallel, so throughput then grows with the number of shards
// (`corral bench shards --delay`).
func (c *Config) SetApplyDelayPerOp(d time.Duration) { c.hooks.applyDelayPerOp = d }

// afterApply runs at the end of an Update that applied ops ops, before the view is published.
func (h *testHooks) afterApply(ops int) {
	if d := h.applyDelayPerOp; d > 0 && ops > 0 {
		time.Sleep(time.Duration(ops) * d)
	}
}

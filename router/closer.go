package router

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// SyncFunc makes this server's replica of a shard catch up with everything committed before
// the call (a ReadIndex).
type SyncFunc func(ctx context.Context, shardID uint64) error

// closer serves the cross-shard read rule for one shard (docs/design.md, "Reads across
// shards"): a read that depends on zxid d may use the local view once every write of this
// shard committed before d was observed is applied locally. Requests that need a catch-up share
// ReadIndex rounds: a round covers only requests that arrived before it started, so a request
// arriving while a round is in flight waits for the next one.
type closer struct {
	// fresh is when (monotonic nanoseconds, monoNow) the last successful round started: the
	// local replica then held everything the shard committed before that moment.
	fresh atomic.Int64
	// reached is when (monoNow) a catch-up outside these rounds last proved that the replica
	// reached its shard's quorum (NoteReachedQuorum: the server's catch-up before it serves).
	reached atomic.Int64
	mu      sync.Mutex
	// closed: every write of the shard committed before this server had observed zxid
	// `closed` is applied locally (set from the server-wide maximum when a round started).
	closed  int64
	current *round // in flight, started before the newest arrivals
	next    *round // starts when current ends; collects the arrivals meanwhile
}

type round struct {
	done     chan struct{}
	err      error
	observed int64 // the server's largest applied zxid when the round started
	started  int64 // monoNow when the round started
}

// monoBase anchors monoNow: monotonic nanoseconds fit an atomic int64.
var monoBase = time.Now()

func monoNow() int64 { return int64(time.Since(monoBase)) }

// Age returns how long ago the local replica of sh last confirmed, with a catch-up round, that
// it held everything the shard had committed (a very large value before the first round).
func (sh *Shard) Age() time.Duration { return sh.AgeAt(time.Now()) }

// AgeAt is Age as of now (a reading of time.Now, whose monotonic clock it uses).
func (sh *Shard) AgeAt(now time.Time) time.Duration {
	f := sh.closer.fresh.Load()
	if f == 0 {
		return time.Duration(1<<62 - 1)
	}
	return time.Duration(int64(now.Sub(monoBase)) - f)
}

// NoteReachedQuorum records that a catch-up (a ReadIndex) started at `at` completed outside the
// rounds of EnsureFresh and EnsureClosed: the server's catch-up before it serves clients. It
// proves the replica reached its shard's quorum then (QuorumAgeAt), not that it is fresh for
// reads (a round also waits for a prepared transaction to resolve; Age is unchanged).
func (sh *Shard) NoteReachedQuorum(at time.Time) {
	t := int64(at.Sub(monoBase))
	for {
		cur := sh.closer.reached.Load()
		if t <= cur || sh.closer.reached.CompareAndSwap(cur, t) {
			return
		}
	}
}

// QuorumAgeAt returns how long ago, as of now, the local replica of sh last proved that it
// reached its shard's quorum: a catch-up round (Age) or the catch-up NoteReachedQuorum noted.
// The rule for a replica cut off from its quorum (server/stuck.go) reads this, not Age: a
// server that caught up before serving has not been cut off for the bound just because no
// round ran since.
func (sh *Shard) QuorumAgeAt(now time.Time) time.Duration {
	age := sh.AgeAt(now)
	if r := sh.closer.reached.Load(); r != 0 {
		age = min(age, time.Duration(int64(now.Sub(monoBase))-r))
	}
	return age
}

// EnsureFresh returns once the local replica of sh is known to hold everything the shard
// committed less than maxAge ago: at once when a catch-up round that started that recently
// succeeded, otherwise after a round that starts after the call. A replica cut off from its
// shard's quorum fails here (ctx's deadline) instead of serving an old state.
//
// A round proves freshness as of its start, so one that took longer than maxAge (the shard
// was electing a leader, say) does not do: another round follows, until ctx ends.
func (r *Router) EnsureFresh(ctx context.Context, sh *Shard, maxAge time.Duration) error {
	for sh.Age() > maxAge {
		sh.closer.mu.Lock()
		if err := r.awaitRound(ctx, sh); err != nil {
			return err
		}
	}
	return nil
}

func (c *closer) init() {}

// SetSync installs the catch-up function EnsureClosed uses (cluster wiring).
func (r *Router) SetSync(f SyncFunc) { r.sync = f }

// EnsureClosed returns once the local view of sh reflects every write of sh that committed
// before the caller observed zxid d: at once when the view's zxid is at least d (zxids grow
// in apply order on a shard, and a prepared transaction commits above the view's zxid) or a
// finished catch-up round already covers d; otherwise after a ReadIndex round that started
// after the call, followed by the local resolution of a transaction the shard holds prepared
// (its commit may carry a zxid at most d and be applied elsewhere already).
func (r *Router) EnsureClosed(ctx context.Context, sh *Shard, d int64) error {
	if v := sh.View(); v != nil && v.Zxid() >= d {
		return nil
	}
	c := &sh.closer
	c.mu.Lock()
	if d <= c.closed {
		c.mu.Unlock()
		return nil
	}
	if err := r.awaitRound(ctx, sh); err != nil { // unlocks c.mu
		return err
	}
	return waitUnblocked(ctx, sh)
}

// awaitRound joins the next catch-up round of sh (one that starts after the call) and waits
// for it. c.mu must be held; awaitRound releases it.
func (r *Router) awaitRound(ctx context.Context, sh *Shard) error {
	c := &sh.closer
	rd := c.next
	if rd == nil {
		rd = &round{done: make(chan struct{})}
		if c.current == nil {
			c.current = rd
			rd.observed = r.maxZxid.Load()
			rd.started = monoNow()
			go r.runRound(sh, rd)
		} else {
			c.next = rd
		}
	}
	c.mu.Unlock()
	select {
	case <-rd.done:
		return rd.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runRound runs one catch-up round and starts the next one if requests queued for it.
func (r *Router) runRound(sh *Shard, rd *round) {
	for rd != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if r.sync == nil {
			rd.err = ErrStopped
		} else {
			rd.err = r.sync(ctx, sh.ID)
		}
		if rd.err == nil {
			rd.err = waitUnblocked(ctx, sh)
		}
		cancel()
		c := &sh.closer
		c.mu.Lock()
		if rd.err == nil && rd.observed > c.closed {
			c.closed = rd.observed
		}
		if rd.err == nil && rd.started > c.fresh.Load() {
			c.fresh.Store(rd.started)
		}
		close(rd.done)
		rd = c.next
		c.next = nil
		c.current = rd
		if rd != nil {
			rd.observed = r.maxZxid.Load()
			rd.started = monoNow()
		}
		c.mu.Unlock()
	}
}

// WaitResolved returns once the local view of sh holds no transaction that it held prepared
// when called: after a sync's ReadIndex, so that a group whose writes were answered at its
// decision (prepared everywhere, commits possibly not applied yet) is visible to reads after
// the sync, as a ZooKeeper sync makes every write answered before it visible.
func (r *Router) WaitResolved(ctx context.Context, sh *Shard) error { return waitUnblocked(ctx, sh) }

// waitUnblocked waits until the local view holds no prepared transaction that was prepared
// when it was called.
func waitUnblocked(ctx context.Context, sh *Shard) error {
	v := sh.View()
	if v == nil {
		return nil
	}
	info, ok := v.Prepared()
	if !ok {
		return nil
	}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if cur, ok := sh.View().Prepared(); !ok || cur.ID != info.ID {
			return nil
		}
	}
}

package router

import (
	"context"
	"fmt"
	"time"

	"github.com/corral/corral/shard"
)

// A session's reads: what a read waits for before it is answered, so that it keeps the order of
// the session's other requests across shards and moves (docs/design.md §8, "Reads").
//
// The rules a read keeps, with ReadBound the session's side of them:
//  1. It is answered from a view of its shard that reflects every write of that shard committed
//     before the session observed its last zxid (Seen): a session never reads older state on
//     one shard than it has seen on another.
//  2. The view is at least as new as the move that put the path's subtree on the shard, and
//     the answer comes from the shard that serves the path once the read ran: a read the
//     subtree moved under runs again where the subtree lives.
//  3. For a session holding watches (Watching), every other shard first reflects the answer's
//     zxid, so that the events of changes the answer may depend on are queued before it.
//  4. A replica that has not confirmed within MaxAge that it holds what its shard committed
//     catches up before it answers.
//
// Each rule is a catch-up of a shard (EnsureClosed, EnsureFresh); a read that has nothing to wait
// for takes none and allocates nothing here.

// ReadBound is one read's side of the rules above.
type ReadBound struct {
	Seen     int64         // the highest zxid the session has seen (rule 1)
	Watching bool          // the session holds watches (rule 3)
	MaxAge   time.Duration // rule 4; 0: no bound
	Now      time.Time     // when the request arrived; rule 4 measures a replica's age then
	// Stale: a read-only session, answered from whatever view this server has, without
	// waiting (rules 1, 3 and 4 do not hold for it).
	Stale bool
	// Timeout bounds all the catch-ups of the read together.
	Timeout time.Duration
	// Limit, if not nil, may give the catch-up of a shard less time than Timeout.
	Limit CatchUpLimit
}

// CatchUpLimit gives a catch-up of one shard a shorter bound than the read's: a server gives a
// replica cut off from its quorum little time, so that its clients soon move to a server that
// reaches the quorum.
type CatchUpLimit interface {
	// CatchUpLimit returns the bound for a catch-up of sh, or 0 for the read's whole Timeout.
	CatchUpLimit(sh *Shard) time.Duration
}

// CatchUpError is a catch-up a read needed that did not finish in time: the local replica of
// Shard is cut off from its quorum, or far behind.
type CatchUpError struct {
	Shard *Shard
	Err   error
}

func (e *CatchUpError) Error() string {
	return fmt.Sprintf("router: shard %d did not catch up for a read: %v", e.Shard.ID, e.Err)
}

func (e *CatchUpError) Unwrap() error { return e.Err }

// ReadView returns a view of sh a read bound by b may be answered from, at least as new as min
// (rules 1, 3 and 4 above; a caller that routed a path passes the zxid of the move Route
// returned, rule 2). A failed catch-up is a *CatchUpError.
func (r *Router) ReadView(sh *Shard, min int64, b ReadBound) (*shard.View, error) {
	if b.Stale {
		if v := sh.View(); v != nil {
			return v, nil
		}
	}
	d := max(b.Seen, min)
	fresh := b.MaxAge <= 0 || sh.AgeAt(b.Now) <= b.MaxAge
	if v := sh.View(); v != nil && v.Zxid() >= d && !b.Watching && fresh {
		return v, nil // nothing to wait for
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
	defer cancel()
	if !fresh {
		if err := r.catchUp(ctx, sh, b, func(ctx context.Context) error { return r.EnsureFresh(ctx, sh, b.MaxAge) }); err != nil {
			return nil, err
		}
	}
	if err := r.catchUp(ctx, sh, b, func(ctx context.Context) error { return r.EnsureClosed(ctx, sh, d) }); err != nil {
		return nil, err
	}
	v := sh.View()
	if b.Watching {
		for _, o := range r.Shards() {
			if o == sh {
				continue
			}
			if err := r.catchUp(ctx, o, b, func(ctx context.Context) error { return r.EnsureClosed(ctx, o, v.Zxid()) }); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// catchUp runs f, a catch-up of sh, within ctx narrowed by b.Limit.
func (r *Router) catchUp(ctx context.Context, sh *Shard, b ReadBound, f func(context.Context) error) error {
	if b.Limit != nil {
		if d := b.Limit.CatchUpLimit(sh); d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
	}
	if err := f(ctx); err != nil {
		return &CatchUpError{Shard: sh, Err: err}
	}
	return nil
}

// Read runs read on the shard serving path and a view of it bound by b (ReadView, rules 1-4),
// and runs it again where the subtree lives if it moved meanwhile (rule 2: the mount table
// changes before the source publishes a view without the subtree, so a read that used such a
// view sees the change when it looks again). It returns the shard and view read last ran on.
func (r *Router) Read(path string, b ReadBound, read func(sh *Shard, v *shard.View)) (*Shard, *shard.View, error) {
	for {
		sh, z := r.Route(path)
		if sh == nil {
			return nil, nil, ErrNoShard
		}
		v, err := r.ReadView(sh, z, b)
		if err != nil {
			return nil, nil, err
		}
		read(sh, v)
		if r.Lookup(path) == sh {
			return sh, v, nil
		}
	}
}

// ReadRegistered is Read for a read that registers a watch: read runs under the shard's
// registration lock on its newest view, so the registration is ordered against every change the
// shard applies later (publish triggers under the same lock). The caller queues its answer and
// then calls unlock, so that no event of a later change is queued before the answer. read may
// run more than once (when the subtree moved while it ran: the destination has not installed it
// yet if it has not moved by the time read returns, since it updates the mount table before it
// applies anything of the subtree), so what it registers must be idempotent.
func (r *Router) ReadRegistered(path string, b ReadBound, read func(sh *Shard, v *shard.View)) (sh *Shard, v *shard.View, unlock func(), err error) {
	for {
		var z int64
		sh, z = r.Route(path)
		if sh == nil {
			return nil, nil, nil, ErrNoShard
		}
		if _, err := r.ReadView(sh, z, b); err != nil {
			return nil, nil, nil, err
		}
		unlock = sh.RegisterLock()
		v = sh.View() // the newest view: registration is ordered against triggering under the lock
		read(sh, v)
		if r.Lookup(path) == sh {
			return sh, v, unlock, nil
		}
		unlock()
	}
}

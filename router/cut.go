package router

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/corral/corral/shard"
)

// Cuts: one consistent state of every data shard at once, for a backup (docs/design.md,
// "Backup: one consistent cut"; format.LevelCut, which the caller checks).
//
// TakeCut prepares a cut (shard.TxnPrepare with Cut set, no ops) on every data shard through
// their control proposers. A shard that holds it applies nothing until it is gone, so once every
// shard answered prepared, this server's replica of each shard holds the state at the cut's
// prepare: TakeCut takes those views (immutable), makes sure with a probe of every shard that
// no shard let the cut go meanwhile (recovery aborts a cut held past its deadline), and aborts
// the cut everywhere. A shard busy with another transaction, or a cut aborted by recovery, makes
// it try again with a new id after a short random pause.

// CutDeadline is how long a shard may hold a cut before recovery aborts it: the longest a backup
// whose server died can stall the writes of every shard (plus a recovery round). Longer than
// TxnDeadline: a cut needs three rounds on every shard, not two on a few.
const CutDeadline = 2 * time.Second

// CutStats describes a cut that was taken.
type CutStats struct {
	Attempts int           // cuts prepared (1 when nothing was in the way)
	Held     time.Duration // from the first prepare submitted to every abort applied: writes stalled at most this long
}

// ErrCutGaveUp: no cut got through before the context ended (other transactions kept every
// attempt busy); nothing was changed.
var ErrCutGaveUp = errors.New("router: no consistent cut before the deadline")

// TakeCut returns this server's view of every data shard at one consistent cut, ordered by shard
// id (see above).
func (r *Router) TakeCut(ctx context.Context) ([]*shard.View, CutStats, error) {
	var parts []uint64
	for _, sh := range r.Shards() {
		parts = append(parts, sh.ID)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	if len(parts) == 0 {
		return nil, CutStats{}, errors.New("router: no data shard")
	}
	var st CutStats
	backoff := 2 * time.Millisecond
	for {
		st.Attempts++
		start := time.Now()
		views, retry, err := r.tryCut(ctx, parts)
		st.Held = time.Since(start)
		if err == nil && !retry {
			return views, st, nil
		}
		if err != nil && ctx.Err() == nil {
			return nil, st, err
		}
		select {
		case <-ctx.Done():
			return nil, st, fmt.Errorf("%w (%d attempts): %v", ErrCutGaveUp, st.Attempts, ctx.Err())
		case <-time.After(backoff + time.Duration(rand.Int64N(int64(backoff)))):
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// tryCut makes one attempt: the views when the cut held on every shard, retry when some shard
// did not hold it. The cut is aborted everywhere in every case.
func (r *Router) tryCut(ctx context.Context, parts []uint64) ([]*shard.View, bool, error) {
	id := rand.Uint64() | 1
	defer r.releaseCut(parts, id)
	prep := shard.TxnPrepare{ID: id, Anchor: parts[0], Deadline: time.Now().Add(CutDeadline).UnixMilli(), Cut: true}
	body := prep.AppendTo(nil)
	got, err := r.broadcast(ctx, parts, func(uint64) shard.Op { return shard.Op{Code: shard.OpTxnPrepare, Body: body} })
	if ok, err := allPrepared(got, err); !ok || err != nil {
		return nil, true, err
	}
	// Every shard applied the prepare on this server (a control op's result comes after the
	// local apply, and the view is published before it): while a shard's view still shows the
	// cut, its tree is the state at the cut's prepare.
	views := make([]*shard.View, len(parts))
	for i, pid := range parts {
		views[i] = r.Shard(pid).View()
		if views[i] == nil || !views[i].PreparedCut(id) {
			return nil, true, nil // recovery let it go already
		}
	}
	r.txnStep("cut-held")
	// A shard whose view still showed the cut may have committed its abort (recovery) before
	// another shard's prepare: the probe, proposed after every prepare committed, finds every
	// shard still holding it only if they held it together.
	probe := (&shard.TxnResolve{ID: id, Probe: true}).AppendTo(nil)
	got, err = r.broadcast(ctx, parts, func(uint64) shard.Op { return shard.Op{Code: shard.OpTxnResolve, Body: probe} })
	if ok, err := allPrepared(got, err); !ok || err != nil {
		return nil, true, err
	}
	return views, false, nil
}

// allPrepared reports whether every reply says the cut is prepared; a transport error is
// returned as is.
func allPrepared(got map[uint64]partReply, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	for _, pr := range got {
		if pr.err != nil {
			return false, pr.err
		}
		if pr.reply.Outcome != shard.TxnPrepared {
			return false, nil
		}
	}
	return true, nil
}

// releaseCut aborts the cut everywhere and waits (a few seconds at most) until this server
// applied every abort, so that the stall a caller reports is over; recovery aborts whatever an
// abort that did not get through left prepared.
func (r *Router) releaseCut(parts []uint64, id uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body := (&shard.TxnAbort{ID: id}).AppendTo(nil)
	r.broadcast(ctx, parts, func(uint64) shard.Op { return shard.Op{Code: shard.OpTxnAbort, Body: body} })
}

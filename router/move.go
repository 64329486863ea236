package router

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// Online subtree moves (docs/design.md, "Subtree moves"). A move is a cross-shard transaction
// between the subtree's current shard (the source) and the destination: prepare the move out
// on the source (it locks the subtree: writes to it wait), copy the subtree from this server's
// view of the source, prepare the move in on the destination with the copy (it checks it holds
// nothing there and locks the subtree too), then commit both under one zxid, anchor first.
// Recovery resolves a move left prepared exactly as any transaction.

// MoveDeadline is how long a move may stay prepared before recovery resolves it. A move's
// prepare-to-commit takes a copy and one more Raft round, longer than a client transaction;
// but it is also how long the two shards' writes can stall when the coordinator dies
// half-way (docs/design.md, "Subtree moves"), so it stays well below a session timeout.
const MoveDeadline = 3 * time.Second

// MaxMoveBytes bounds the encoded size of a subtree moved in one transaction (it travels in
// one Raft entry of the destination).
const MaxMoveBytes = 32 << 20

// MoveResult describes a completed move.
type MoveResult struct {
	Path     string
	From, To uint64
	Zxid     int64 // the commit zxid
	Bytes    int   // size of the copied subtree
}

// ErrMoveRefused: the move cannot be done as asked; nothing changed.
var ErrMoveRefused = errors.New("router: move refused")

// Move moves the subtree at path (which need not exist yet) to the data shard to, online:
// writes to the subtree wait during the move (about two Raft rounds plus the copy), reads go
// on. It returns ErrMoveRefused (wrapped, with the reason) when the path cannot be a mount
// point, the shard is unknown or already holds the subtree, the subtree contains another
// mount, or the destination holds nodes there; another error when the outcome is unknown
// (recovery finishes or aborts a move left prepared).
func (r *Router) Move(ctx context.Context, path string, to uint64) (MoveResult, error) {
	if why := ValidMount(path); why != "" {
		return MoveResult{}, fmt.Errorf("%w: %s: %s", ErrMoveRefused, path, why)
	}
	dst := r.Shard(to)
	if dst == nil {
		return MoveResult{}, fmt.Errorf("%w: no data shard %d", ErrMoveRefused, to)
	}
	if dst.View() == nil || dst.Tag() == 0 {
		return MoveResult{}, fmt.Errorf("%w: data shard %d (added online) does not run on this server yet", ErrMoveRefused, to)
	}
	backoff := 5 * time.Millisecond
	for {
		src := r.Lookup(path)
		if src == dst {
			return MoveResult{}, fmt.Errorf("%w: %s is on shard %d already", ErrMoveRefused, path, to)
		}
		for _, m := range r.Mounts() {
			if m.Path != path && m.Path != "/" && len(m.Path) > len(path) && m.Path[:len(path)] == path && m.Path[len(path)] == '/' {
				return MoveResult{}, fmt.Errorf("%w: %s holds the mount %s (on shard %d): move that first", ErrMoveRefused, path, m.Path, m.ShardID)
			}
		}
		if why := quotaBlocksMove(path, src); why != "" {
			return MoveResult{}, fmt.Errorf("%w: %s: %s", ErrMoveRefused, path, why)
		}
		res, retry, err := r.tryMove(ctx, path, src, dst)
		if err != nil || !retry {
			return res, err
		}
		select {
		case <-ctx.Done():
			return MoveResult{}, ErrTxnGaveUp
		case <-time.After(backoff + time.Duration(rand.Int64N(int64(backoff)))):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// prepareOne sends one prepare to one participant and returns its reply.
func (r *Router) prepareOne(ctx context.Context, id uint64, p *shard.TxnPrepare) (shard.TxnReply, error) {
	got, err := r.broadcast(ctx, []uint64{id}, func(uint64) shard.Op {
		return shard.Op{Code: shard.OpTxnPrepare, Body: p.AppendTo(nil)}
	})
	if err == nil {
		err = got[id].err
	}
	return got[id].reply, err
}

func (r *Router) tryMove(ctx context.Context, path string, src, dst *Shard) (MoveResult, bool, error) {
	txnID := rand.Uint64() | 1
	anchor := min(src.ID, dst.ID)
	parts := []uint64{anchor, max(src.ID, dst.ID)}
	deadline := time.Now().Add(MoveDeadline).UnixMilli()
	out := shard.TxnPrepare{ID: txnID, Anchor: anchor, Deadline: deadline, Move: &shard.MoveSpec{Path: path, To: dst.ID}}
	repOut, err := r.prepareOne(ctx, src.ID, &out)
	if err != nil {
		r.abortAll(parts, txnID)
		return MoveResult{}, false, err
	}
	switch repOut.Outcome {
	case shard.TxnPrepared:
	case shard.TxnFailed:
		r.abortAll(parts, txnID)
		if repOut.FailErr == shard.ErrMoved {
			return MoveResult{}, true, nil // the mount table was stale: look again
		}
		return MoveResult{}, false, fmt.Errorf("%w: source shard %d: %s", ErrMoveRefused, src.ID, repOut.FailErr)
	default:
		r.abortAll(parts, txnID)
		return MoveResult{}, true, nil
	}
	// The prepare's result arrives after this server's replica applied it, so its view holds
	// the subtree as it is until the commit (the lock keeps writes out).
	nodes := src.View().ExportSubtree(path)
	if len(nodes) > MaxMoveBytes {
		r.abortAll(parts, txnID)
		return MoveResult{}, false, fmt.Errorf("%w: the subtree at %s takes %d bytes, more than %d", ErrMoveRefused, path, len(nodes), MaxMoveBytes)
	}
	in := shard.TxnPrepare{ID: txnID, Anchor: anchor, Deadline: deadline, Move: &shard.MoveSpec{Path: path, To: dst.ID, In: true, Nodes: nodes}}
	repIn, err := r.prepareOne(ctx, dst.ID, &in)
	if err != nil {
		r.abortAll(parts, txnID)
		return MoveResult{}, false, err
	}
	switch repIn.Outcome {
	case shard.TxnPrepared:
	case shard.TxnFailed:
		r.abortAll(parts, txnID)
		reason := repIn.FailErr.Error()
		if repIn.FailErr == wire.ErrNodeExists {
			reason = "it already holds nodes in " + path
		}
		return MoveResult{}, false, fmt.Errorf("%w: destination shard %d: %s", ErrMoveRefused, dst.ID, reason)
	default:
		r.abortAll(parts, txnID)
		return MoveResult{}, true, nil
	}
	r.txnStep("prepared")
	zxid := max(repOut.Floor, repIn.Floor)<<8 | int64(r.Shard(anchor).Tag())
	if _, retry, err := r.commitTxn(ctx, parts, txnID, zxid, nil); err != nil || retry {
		return MoveResult{}, retry, err
	}
	return MoveResult{Path: path, From: src.ID, To: dst.ID, Zxid: zxid, Bytes: len(nodes)}, false, nil
}

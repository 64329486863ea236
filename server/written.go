package server

import (
	"sync/atomic"

	"github.com/corral/corral/session"
	"github.com/corral/corral/shard"
)

// writtenShards records the data shards a session wrote to, so that its closeSession ends it
// on those shards only (session.Written; docs/design.md §4, "Closing on the shards written").
//
// Invariant: when the connection that created the session closes it, every data shard that can
// hold a trace of the session (an ephemeral, the stub of a top-level one, an ownership record) is
// in the set, unless a subtree moved since the session was created (then the close reaches
// every shard: cluster, closeOnShards). A shard is added before any write is submitted to it,
// by every path a write of a connection takes (propose, a transaction's participants, a reroute
// after a move), and only the connection that created the session tracks it: a session taken
// over by another connection (of this server or another) may have written through it, and is
// closed everywhere.
type writtenShards struct {
	gen      uint64           // the router's mount generation when the session was created
	bits     [4]atomic.Uint64 // shard ids below 256
	overflow atomic.Bool      // a shard id of 256 or more: not tracked
}

// note adds shard id; w may be nil (nothing tracked).
func (w *writtenShards) note(id uint64) {
	if w == nil {
		return
	}
	if id >= 64*uint64(len(w.bits)) {
		w.overflow.Store(true)
		return
	}
	w.bits[id/64].Or(1 << (id % 64))
}

// noteRoles adds the participants of a transaction.
func (w *writtenShards) noteRoles(roles map[uint64][]shard.TxnRole) {
	for id := range roles {
		w.note(id)
	}
}

// scope returns what the close may rely on.
func (w *writtenShards) scope() session.Written {
	if w == nil || w.overflow.Load() {
		return session.Written{}
	}
	out := session.Written{Complete: true, Gen: w.gen}
	for i := range w.bits {
		b := w.bits[i].Load()
		for j := uint64(0); j < 64; j++ {
			if b&(1<<j) != 0 {
				out.Shards = append(out.Shards, uint64(i)*64+j)
			}
		}
	}
	return out
}

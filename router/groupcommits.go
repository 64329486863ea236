package router

import (
	"sync"
	"sync/atomic"
	"time"
)

// Handing a group's commits to the session's next group (docs/design.md §8, "A group's commits
// travel with the next group's prepares").
//
// A group transaction right behind another one of the same session is prepared as soon as that
// one is decided (server/group.go), and its prepares must reach each shard after that one's
// commit. Submitted separately, a shard's commit of the first group and prepare of the second
// are usually two Raft entries. Instead the first group's coordinator offers its commits at the
// decision rather than submitting them, and the next group's coordinator takes them and submits
// each shard's commit and prepare together (Proposer.SubmitAll): one entry, in that order. The
// commits are submitted by their own coordinator instead once the server releases them
// (GroupCommits.Release: something waits for the group to be applied, or no next group will
// take them), or when no next group took them within handoffWait; a next group that finds them
// taken back waits until they are submitted before it submits its prepares. Either way each
// shard's control proposer receives the commit first.

// handoffWait is how long a decided group's coordinator waits for the next group to take its
// commits, unless released, before it submits them itself (a variable for tests).
var handoffWait = 5 * time.Millisecond

// Handoff states.
const (
	handoffNone    int32 = iota // not offered: the commits were submitted before the decision
	handoffOffered              // offered, waiting for the next group
	handoffTaken                // taken by the next group's coordinator
	handoffBack                 // taken back by the group's own coordinator
)

// GroupCommits is one group transaction's commits, handed to the session's next group
// (TxnRequest.Commits of the first group, TxnRequest.After of the next).
type GroupCommits struct {
	state atomic.Int32
	// reqs are the commits by shard id, set before the state becomes handoffOffered.
	reqs map[uint64]*Request
	// submitted is closed once the commits are submitted, by whichever side took them.
	submitted chan struct{}
	once      sync.Once
	// release is closed by Release: the coordinator submits the commits itself at once.
	release     chan struct{}
	releaseOnce sync.Once
}

// NewGroupCommits returns an empty handle.
func NewGroupCommits() *GroupCommits {
	return &GroupCommits{submitted: make(chan struct{}), release: make(chan struct{})}
}

// Release tells the group's coordinator not to wait for a next group: the commits, offered or
// about to be, are submitted at once unless a next group took them already. The server
// releases them when something waits for the group to be applied (a read, the connection's
// close) and when the group's replies wait for its commits. Release may be called any number
// of times, before or after the decision.
func (h *GroupCommits) Release() { h.releaseOnce.Do(func() { close(h.release) }) }

// Handed reports whether the next group took the commits (they travelled with its prepares).
func (h *GroupCommits) Handed() bool { return h.state.Load() == handoffTaken }

func (h *GroupCommits) markSubmitted() { h.once.Do(func() { close(h.submitted) }) }

// submitCommits submits a decided group's commits (reqs by shard id): offered to the next group
// when the request has a handle, else at once. decided is called once they are submitted or
// offered, before this waits for a taker, a release or handoffWait.
func (r *Router) submitCommits(h *GroupCommits, reqs map[uint64]*Request, decided func()) {
	if h == nil {
		for id, req := range reqs {
			r.Shard(id).Control.Submit(req)
		}
		decided()
		return
	}
	h.reqs = reqs
	h.state.Store(handoffOffered)
	decided()
	t := time.NewTimer(handoffWait)
	defer t.Stop()
	select {
	case <-h.submitted:
		return
	case <-h.release:
	case <-t.C:
	}
	if h.state.CompareAndSwap(handoffOffered, handoffBack) {
		for id, req := range reqs {
			r.Shard(id).Control.Submit(req)
		}
		h.markSubmitted()
	}
	// Otherwise the next group took them: its coordinator submits them.
}

// takeCommits is the next group's side: the previous group's commits to submit before (with)
// this group's prepares, or nil when there are none to submit here (submitted already, or
// taken back by their coordinator: then it returns once they are submitted). The caller submits
// what it got and calls h.markSubmitted.
func takeCommits(h *GroupCommits) map[uint64]*Request {
	if h == nil {
		return nil
	}
	if h.state.CompareAndSwap(handoffOffered, handoffTaken) {
		return h.reqs
	}
	if h.state.Load() == handoffBack {
		<-h.submitted
	}
	return nil
}

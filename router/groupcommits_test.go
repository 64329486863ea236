package router

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// stateRaft applies a shard's batches to a shard.State in proposal order and records the op
// codes of every applied control batch and the prepares it held.
type stateRaft struct {
	mu       sync.Mutex
	st       *shard.State
	control  [][]wire.OpCode
	prepares []shard.TxnPrepare
}

func (f *stateRaft) propose(_ context.Context, cmd []byte) (func() ([]byte, error), error) {
	b, err := shard.DecodeBatch(cmd)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	res, _ := f.st.Apply(&b)
	if b.Control && res.Status == shard.BatchApplied {
		codes := make([]wire.OpCode, len(b.Ops))
		for i := range b.Ops {
			codes[i] = b.Ops[i].Code
			if b.Ops[i].Code == shard.OpTxnPrepare {
				if p, err := shard.DecodeTxnPrepare(b.Ops[i].Body); err == nil {
					f.prepares = append(f.prepares, p)
				}
			}
		}
		f.control = append(f.control, codes)
	}
	out := res.AppendTo(nil)
	return func() ([]byte, error) { return out, nil }, nil
}

// TestGroupCommitsTravelWithNextPrepares: two group transactions of one session over two
// shards, the second prepared at the first's decision with the first's commits handed to it
// (GroupCommits). On each shard the first's commit and the second's prepare are applied in one
// control batch, commit first; both groups commit; and the results each reported at its
// decision (provisionalResults, from the prepares) equal, field by field, the ones its commits
// reported — stats included, for creates and setDatas of nodes the same group or the one before
// wrote. Each prepare carries its shard's ops only: another shard's op is a placeholder check
// (shard.ParticipantMulti).
func TestGroupCommitsTravelWithNextPrepares(t *testing.T) {
	defer func(d time.Duration) { handoffWait = d }(handoffWait)
	handoffWait = time.Minute // the test takes them; never taken back

	r := New([]uint64{2, 3}, []uint8{1, 2}, PlaceHash, nil)
	rafts := map[uint64]*stateRaft{
		2: {st: shard.NewState(shard.StateConfig{Tag: 1, OwnsRoot: true, Root: "/"})},
		3: {st: shard.NewState(shard.StateConfig{Tag: 2})},
	}
	for id, f := range rafts {
		sh := r.Shard(id)
		sh.Control = NewProposer(id, f.propose, ProposerOptions{Control: true})
		defer sh.Control.Stop()
	}
	create := func(path string) wire.MultiOp {
		return wire.MultiOp{Op: wire.OpCreate2, Create: &wire.CreateRequest{Path: path, Data: []byte("v"), ACL: wire.OpenACLUnsafe}}
	}
	setData := func(path string) wire.MultiOp {
		return wire.MultiOp{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: path, Data: []byte("longer"), Version: -1}}
	}
	// /a lives on shard 2 (the root shard), /b on shard 3: a top-level create there is a node
	// side on 3 and a parent side on 2.
	roles := func(ops []wire.MultiOp) map[uint64][]shard.TxnRole {
		rs := map[uint64][]shard.TxnRole{2: make([]shard.TxnRole, len(ops)), 3: make([]shard.TxnRole, len(ops))}
		for i, op := range ops {
			path, _, _, _ := opTarget(&op)
			switch {
			case path == "/b":
				rs[2][i], rs[3][i] = shard.RoleParent, shard.RoleNode
			case path == "/a" || path[:3] == "/a/":
				rs[2][i] = shard.RoleFull
			default:
				rs[3][i] = shard.RoleFull
			}
		}
		return rs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	type run struct {
		h       *GroupCommits
		decided chan struct{}
		early   []wire.MultiResult
		top     int64
		res     TxnResult
		err     error
		done    chan struct{}
	}
	start := func(ops []wire.MultiOp, minZxid int64, after *GroupCommits) *run {
		g := &run{h: NewGroupCommits(), decided: make(chan struct{}), done: make(chan struct{})}
		req := &TxnRequest{Session: 1, MinZxid: minZxid, Multi: wire.MultiRequest{Ops: ops}, Group: true,
			Commits: g.h, After: after, Decided: func(z int64, results []wire.MultiResult) {
				g.early, g.top = results, shard.GroupZxid(z, len(ops)-1)
				close(g.decided)
			}}
		go func() {
			defer close(g.done)
			g.res, g.err = r.RunTxn(ctx, req, roles(ops))
		}()
		return g
	}
	first := []wire.MultiOp{create("/a"), create("/b"), create("/a/x"), create("/b/y"), setData("/b/y"), setData("/a")}
	second := []wire.MultiOp{setData("/a/x"), create("/b/z"), setData("/b"), create("/a/w"), setData("/b/z")}
	g1 := start(first, 0, nil)
	<-g1.decided
	g2 := start(second, g1.top, g1.h)
	<-g2.decided
	g2.h.Release() // no group after it: its commits go at once, not after handoffWait
	for i, g := range []*run{g1, g2} {
		<-g.done
		if g.err != nil || g.res.Failed {
			t.Fatalf("group %d: %+v, %v", i+1, g.res, g.err)
		}
		for k := range g.res.Results {
			if got, want := fmt.Sprintf("%+v", g.early[k]), fmt.Sprintf("%+v", g.res.Results[k]); got != want {
				t.Fatalf("group %d op %d: reported at the decision %s, committed %s", i+1, k, got, want)
			}
		}
	}
	if !g1.h.Handed() {
		t.Fatal("the second group did not take the first one's commits")
	}
	for id, f := range rafts {
		f.mu.Lock()
		batches := slices.Clone(f.control)
		f.mu.Unlock()
		found := false
		for _, codes := range batches {
			if slices.Equal(codes, []wire.OpCode{shard.OpTxnCommit, shard.OpTxnPrepare}) {
				found = true
			}
		}
		if !found {
			t.Fatalf("shard %d: no control batch holds a commit and then a prepare: %v", id, batches)
		}
		f.mu.Lock()
		prepares := slices.Clone(f.prepares)
		f.mu.Unlock()
		if len(prepares) != 2 {
			t.Fatalf("shard %d applied %d prepares, want 2", id, len(prepares))
		}
		for _, p := range prepares {
			for i, op := range p.Multi.Ops {
				if (p.Roles[i] == shard.RoleNone) != (op.Op == wire.OpCheck) {
					t.Fatalf("shard %d: prepare op %d (role %d) is %+v: another shard's op must be a placeholder check, its own op itself", id, i, p.Roles[i], op)
				}
			}
		}
	}
}

// TestGroupCommitsWaitForReleaseOrNextGroup: a decided group offers its commits even when no
// next group exists yet (one may form from the replies its decision queued), so they are not
// submitted at the decision: with the hand-off's bound far away, the group's transaction does
// not finish until the server releases the commits, and then finishes at once.
func TestGroupCommitsWaitForReleaseOrNextGroup(t *testing.T) {
	defer func(d time.Duration) { handoffWait = d }(handoffWait)
	handoffWait = time.Minute

	r := New([]uint64{2, 3}, []uint8{1, 2}, PlaceHash, nil)
	for id, tag := range map[uint64]uint8{2: 1, 3: 2} {
		f := &stateRaft{st: shard.NewState(shard.StateConfig{Tag: tag, OwnsRoot: id == 2, Root: "/"})}
		sh := r.Shard(id)
		sh.Control = NewProposer(id, f.propose, ProposerOptions{Control: true})
		defer sh.Control.Stop()
	}
	ops := []wire.MultiOp{
		{Op: wire.OpCreate2, Create: &wire.CreateRequest{Path: "/a", Data: []byte("v"), ACL: wire.OpenACLUnsafe}},
		{Op: wire.OpCreate2, Create: &wire.CreateRequest{Path: "/b", Data: []byte("v"), ACL: wire.OpenACLUnsafe}},
	}
	// /a and /b are top-level creates: parent side on the root shard 2, node side on their own.
	roles := map[uint64][]shard.TxnRole{2: {shard.RoleFull, shard.RoleParent}, 3: {shard.RoleNone, shard.RoleNode}}
	if r.Lookup("/a").ID != 2 || r.Lookup("/b").ID != 3 {
		t.Skipf("placement put /a on %d and /b on %d; the roles above assume 2 and 3", r.Lookup("/a").ID, r.Lookup("/b").ID)
	}
	h := NewGroupCommits()
	decided := make(chan struct{})
	done := make(chan error, 1)
	req := &TxnRequest{Session: 1, Multi: wire.MultiRequest{Ops: ops}, Group: true, Commits: h,
		Decided: func(int64, []wire.MultiResult) { close(decided) }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { _, err := r.RunTxn(ctx, req, roles); done <- err }()
	<-decided
	select {
	case err := <-done:
		t.Fatalf("the group finished (%v) with its commits neither taken nor released: they were submitted at the decision", err)
	case <-time.After(300 * time.Millisecond):
	}
	released := time.Now()
	h.Release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the group did not finish after its commits were released")
	}
	if d := time.Since(released); d > 5*time.Second {
		t.Fatalf("finished %v after the release", d)
	}
	if h.Handed() {
		t.Fatal("no next group took the commits, yet they count as handed")
	}
}

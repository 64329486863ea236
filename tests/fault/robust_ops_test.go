package faulttest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/corral/corral/internal/corralproc"
)

// Operations during the fault (Corral only): the fault suite's "each nemesis during a subtree
// move, an online shard add and a membership change". A run may start one, at a random moment
// in the first half of the outage. A move works on the subtree of the run's first register keys
// (so the register, linearizability and lost-write checkers watch keys that change shards while
// the fault is on). The operation is asked of a random server and asked again, through the next
// server, every rbOpRetry until its answer says it is done, as docs/operations.md tells an
// operator to; a request the fault cut is simply asked again. Checked besides the run's usual
// checkers: the operation is done within rbProgressBound of the heal, and what it changed holds
// on every server afterwards (verify).
type rbOp struct {
	name string
	// run performs the operation on path and returns what it did, for the log.
	run func(r *rbRun, ctx context.Context, path string) (string, error)
	// verify checks, after the heal, that every server agrees on the operation's result.
	verify func(r *rbRun, path string) error
}

var (
	rbOpNone = rbOp{name: "none"}
	// rbOpMove moves the subtree to the other data shard.
	rbOpMove = rbOp{name: "move", verify: sameMount, run: func(r *rbRun, ctx context.Context, path string) (string, error) {
		to := rbDataShards[1]
		if strings.TrimPrefix(path, "/") == r.subtrees[1] {
			to = rbDataShards[0]
		}
		return r.moveTo(ctx, path, to)
	}}
	// rbOpAddShardMove adds a data shard online (POST /shards/add?expect=2, asked again with
	// the same expect, so it is added once) and moves the subtree onto it.
	rbOpAddShardMove = rbOp{name: "add-shard+move", verify: sameMount, run: func(r *rbRun, ctx context.Context, path string) (string, error) {
		there := fmt.Sprintf("there are %d", rbShards+1)
		add, err := r.askUntil(ctx, fmt.Sprintf("/shards/add?expect=%d&timeout=10s", rbShards), func(a adminAnswer) bool {
			return a.code == http.StatusOK || a.code == http.StatusConflict && strings.Contains(a.body, there)
		})
		if err != nil {
			return add, err
		}
		mv, err := r.moveTo(ctx, path, rbDataShards[len(rbDataShards)-1]+1)
		return add + "; " + mv, err
	}}
	// rbOpAddObserver starts a fourth server and adds it to every Raft group as an observer
	// (POST /members/add, asked again until every group answers); it must then serve as one.
	// From then on the checkers read through it too.
	rbOpAddObserver = rbOp{name: "add-observer", verify: observerServes, run: func(r *rbRun, ctx context.Context, _ string) (string, error) {
		ce := r.e.(*corralproc.Ensemble)
		obs, err := ce.AddObserver()
		if err != nil {
			return "", err
		}
		q := fmt.Sprintf("/members/add?id=%d&raft=%s&observer=true", obs+1, ce.RaftAddr(obs))
		return r.askUntil(ctx, q, func(a adminAnswer) bool { return membersDone(a, rbShards+1) })
	}}
	rbOps = []rbOp{rbOpNone, rbOpMove, rbOpAddShardMove, rbOpAddObserver}
)

// rbOpRetry is how long a client of the admin API waits before it asks again.
const rbOpRetry = 200 * time.Millisecond

// rbAdminClient gives up a request after 8 s: a server cut off from its peers may hold a move
// until its own deadlines pass, and the operator asks another server meanwhile.
var rbAdminClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 8 * time.Second}

func (r *rbRun) moveTo(ctx context.Context, path string, to uint64) (string, error) {
	return r.askUntil(ctx, fmt.Sprintf("/move?path=%s&shard=%d", path, to), func(a adminAnswer) bool { return moveDone(a, to) })
}

// askUntil POSTs pathQuery to a random server of those the run started with, then to the next
// one every rbOpRetry, until done accepts an answer or ctx ends. A 400 is a refusal, not a
// fault: it ends the asking.
func (r *rbRun) askUntil(ctx context.Context, pathQuery string, done func(adminAnswer) bool) (string, error) {
	ce := r.e.(*corralproc.Ensemble)
	began := time.Now()
	server := r.opRng.IntN(r.voters)
	for attempt := 1; ; attempt++ {
		a := adminDo(rbAdminClient, http.MethodPost, ce, server, pathQuery)
		if done(a) {
			return fmt.Sprintf("POST %s done by server %d after %d attempts in %v: %s", pathQuery, server+1, attempt,
				time.Since(began).Round(time.Millisecond), strings.TrimSpace(a.body)), nil
		}
		if a.code == http.StatusBadRequest {
			return "", fmt.Errorf("POST %s refused by server %d: %v", pathQuery, server+1, a)
		}
		if !sleepCtx(ctx, rbOpRetry) {
			return "", fmt.Errorf("POST %s not done after %d attempts in %v; last answer (server %d): %v", pathQuery, attempt,
				time.Since(began).Round(time.Millisecond), server+1, a)
		}
		server = (server + 1) % r.voters
	}
}

// startOp runs op on its own goroutine after a random delay in [0, within) and returns a
// channel that delivers its outcome (nil for rbOpNone). The operation's context ends
// rbProgressBound after the heal at the latest (the caller cancels it).
func (r *rbRun) startOp(ctx context.Context, op rbOp, within time.Duration) <-chan error {
	if op.run == nil {
		return nil
	}
	path := "/" + r.subtrees[0]
	delay := time.Duration(r.opRng.Int64N(int64(within) + 1))
	out := make(chan error, 1)
	go func() {
		if !sleepCtx(ctx, delay) {
			out <- ctx.Err()
			return
		}
		what, err := op.run(r, ctx, path)
		if err == nil {
			r.t.Logf("operation %s of %s, begun %v after the fault began: %s", op.name, path, delay.Round(time.Millisecond), what)
		}
		out <- err
	}()
	return out
}

// checkOp waits for the operation's outcome and then for every server to agree on its result;
// it records violations.
func (r *rbRun) checkOp(op rbOp, outcome <-chan error) {
	if outcome == nil {
		return
	}
	if err := <-outcome; err != nil {
		r.violation("operation %s during the fault: %v", op.name, err)
		return
	}
	path := "/" + r.subtrees[0]
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := op.verify(r, path)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.violation("after operation %s: %v", op.name, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sameMount: every server mounts path on one shard, the same everywhere.
func sameMount(r *rbRun, path string) error {
	ce := r.e.(*corralproc.Ensemble)
	mounts := map[uint64][]int{}
	for i := 0; i < ce.Size(); i++ {
		p, err := readPlacement(ce, i)
		if err != nil {
			return err
		}
		mounts[p.mounts[path]] = append(mounts[p.mounts[path]], i+1)
	}
	if len(mounts) != 1 || mounts[0] != nil {
		return fmt.Errorf("the servers do not agree where %s lives (shard → servers %v)", path, mounts)
	}
	return nil
}

// observerServes: the added server answers srvr with Mode observer.
func observerServes(r *rbRun, _ string) error {
	ce := r.e.(*corralproc.Ensemble)
	obs := ce.Size() - 1
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
	defer cancel()
	m, err := ce.Mode(ctx, obs)
	if err != nil || m != "observer" {
		return fmt.Errorf("server %d: srvr Mode %q, %v; want observer", obs+1, m, err)
	}
	return nil
}

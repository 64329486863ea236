package clustertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral/corral/client"
	"github.com/corral/corral/wire"
)

// TestMovesDuringConcurrentGroups: four sessions pipeline creates round-robin over four
// top-level subtrees on three shards, so their writes run as groups that meet each other on the
// shards' prepared slots, while one of the subtrees moves to another shard and back every
// 200 ms; the sessions go on until six moves are done. The moves must get through, every
// session's creates must take effect in its order (zxids increasing in request order), none may
// fail, and every acknowledged create must be there at the end. Without groups yielding to
// waiting writers (docs/design.md §8) the sessions' writes stalled behind each other's groups
// until their connections were lost (CONNECTIONLOSS), and no move completed.
func TestMovesDuringConcurrentGroups(t *testing.T) {
	ids := []uint64{2, 3, 4, 5}
	byShard := topLevelNamesByShard("mg", ids)
	from := ids[1]
	moving, staying := "/"+byShard[from][0], "/"+byShard[from][1]
	subtrees := []string{moving, "/" + byShard[ids[2]][0], staying, "/" + byShard[ids[3]][0]}

	cl := startAtSupportedLevel(t, 3, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, err := client.Dial(ctx, []string{cl.Addrs()[1]}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, p := range subtrees {
		if _, _, err := admin.Create(ctx, p, nil, 0, nil); err != nil {
			t.Fatal(err)
		}
	}

	const minMoves = 6
	var moves atomic.Int64
	stop := make(chan struct{})
	moverDone := make(chan error, 1)
	go func() {
		to := []uint64{ids[0], from}
		for i := 0; ; i++ {
			select {
			case <-stop:
				moverDone <- nil
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := cl.Server(i%3).Router().Move(ctx, moving, to[i%2]); err != nil {
				moverDone <- fmt.Errorf("move %d of %s to shard %d: %w", i+1, moving, to[i%2], err)
				return
			}
			moves.Add(1)
		}
	}()

	type created struct {
		path string
		zxid int64
	}
	const sessions, minPerSession, inFlight = 4, 600, 32
	results := make([][]created, sessions)
	errs := make(chan error, sessions)
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for s := range sessions {
		c, err := client.Dial(ctx, []string{cl.Addrs()[s%3]}, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mu sync.Mutex
			var failed error
			var bw sync.WaitGroup
			sem := make(chan struct{}, inFlight)
			var mine []created
			for n := 0; n < minPerSession || moves.Load() < minMoves && time.Now().Before(deadline); n++ {
				sem <- struct{}{}
				bw.Add(1)
				p := fmt.Sprintf("%s/s%d-%d", subtrees[n%len(subtrees)], s, n)
				mu.Lock()
				mine = append(mine, created{path: p})
				mu.Unlock()
				c.CreateAsync(p, nil, wire.FlagPersistent, nil, func(_ string, st wire.Stat, err error) {
					defer bw.Done()
					<-sem
					mu.Lock()
					defer mu.Unlock()
					if err != nil && failed == nil {
						failed = fmt.Errorf("session %d: create %s: %w", s, p, err)
					}
					mine[n].zxid = st.Czxid
				})
			}
			bw.Wait()
			results[s] = mine
			if failed != nil {
				errs <- failed
				return
			}
			for n := 1; n < len(mine); n++ {
				if a, b := mine[n-1], mine[n]; b.zxid <= a.zxid {
					errs <- fmt.Errorf("session %d: create %d (%s) has zxid %#x, not above create %d's (%s) %#x",
						s, n, b.path, b.zxid, n-1, a.path, a.zxid)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-moverDone; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	reader, err := client.Dial(ctx, []string{cl.Addrs()[2]}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	for _, p := range subtrees {
		if _, err := reader.Sync(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for s := range sessions {
		total += len(results[s])
		for _, r := range results[s] {
			if ok, st, err := reader.Exists(ctx, r.path, false); err != nil || !ok || st.Czxid != r.zxid {
				t.Fatalf("%s: exists %v, %v, czxid %#x, acknowledged with %#x", r.path, ok, err, st.Czxid, r.zxid)
			}
		}
	}
	var rerouted int64
	var busy, yielded float64
	for i := range 3 {
		rerouted += cl.Server(i).ReroutedWrites()
		b, err1 := cl.Metric(i, "corral_write_groups_busy_total")
		y, err2 := cl.Metric(i, "corral_write_groups_yielded_total")
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		busy, yielded = busy+b, yielded+y
	}
	t.Logf("%d moves of %s; %d creates by %d sessions; %d writes sent back and proposed again; groups: %.0f met another, %.0f yielded",
		moves.Load(), moving, total, sessions, rerouted, busy, yielded)
	if moves.Load() < minMoves {
		t.Fatalf("%d moves in 30 s of the sessions' writes", moves.Load())
	}
}

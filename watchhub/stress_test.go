package watchhub

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// TestConcurrentStress registers one-shot, persistent and recursive watches on many goroutines
// while several "shards" trigger events on disjoint subtrees and short-lived connections come and
// go. Every one-shot watch must fire at most once while this runs; a final delete of every path
// must fire each remaining one exactly once and leave no one-shot watch behind. Run with -race.
func TestConcurrentStress(t *testing.T) {
	const (
		shards      = 4
		pathsPer    = 24
		oneShot     = 24 // watchers with only one-shot watches
		registrars  = 4
		churners    = 2
		triggerRuns = 3000
	)
	h := New(Options{})
	var paths [shards][]string
	var all []string
	for s := 0; s < shards; s++ {
		for j := 0; j < pathsPer; j++ {
			p := fmt.Sprintf("/s%d/n%d", s, j)
			if j%3 == 0 {
				p = fmt.Sprintf("/s%d/n%d/deep/er", s, j)
			}
			paths[s] = append(paths[s], p)
			all = append(all, p)
		}
	}

	ws := make([]*fakeConn, oneShot)
	for i := range ws {
		ws[i] = &fakeConn{id: uint64(i + 1)}
	}
	pers := []*fakeConn{{id: 1001}, {id: 1002}, {id: 1003}}
	h.AddPersistentRecursive(pers[0], "/")
	h.AddPersistentRecursive(pers[1], "/s1")
	h.AddPersistent(pers[2], paths[2][0])

	var wg sync.WaitGroup
	stop := make(chan struct{})

	// Registrars: each owns oneShot/registrars watchers; watcher i registers a data watch
	// (even i) or a child watch (odd i) on every path exactly once, in random order.
	for r := 0; r < registrars; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for i := r; i < oneShot; i += registrars {
				for _, k := range rng.Perm(len(all)) {
					if i%2 == 0 {
						h.AddData(ws[i], all[k])
					} else {
						h.AddChild(ws[i], all[k])
					}
				}
			}
		}()
	}

	// Shards: each triggers random events on its own subtree.
	kinds := []wire.EventType{wire.EventNodeCreated, wire.EventNodeDataChanged, wire.EventNodeChildrenChanged,
		wire.EventNodeDeleted}
	for s := 0; s < shards; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(s), 2))
			for n := 0; n < triggerRuns; n++ {
				batch := make([]shard.Event, 1+rng.IntN(3))
				for i := range batch {
					batch[i] = shard.Event{Type: kinds[rng.IntN(len(kinds))], Path: paths[s][rng.IntN(pathsPer)],
						ACL: wire.OpenACLUnsafe}
				}
				h.Trigger(batch)
			}
		}()
	}

	// Churners: connections that register a mix of watches and then close, plus removals and
	// introspection racing with everything else.
	var churnWG sync.WaitGroup
	for c := 0; c < churners; c++ {
		churnWG.Add(1)
		go func() {
			defer churnWG.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 3))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				w := &fakeConn{id: uint64(10000 + c*1_000_000 + n)}
				for k := 0; k < 8; k++ {
					p := all[rng.IntN(len(all))]
					switch rng.IntN(6) {
					case 0:
						h.AddData(w, p)
					case 1:
						h.AddChild(w, p)
					case 2:
						h.AddPersistent(w, p)
					case 3:
						h.AddPersistentRecursive(w, p[:strings.LastIndexByte(p, '/')])
					case 4:
						h.Remove(w, p, int32(1+rng.IntN(3)))
					case 5:
						h.Has(w, p, wire.WatcherAny)
					}
				}
				if n%50 == 0 {
					_ = h.Count()
					_ = h.ByWatcher()
					_ = h.ByPath()
					_ = h.Stats()
				}
				h.RemoveWatcher(w)
			}
		}()
	}

	wg.Wait()
	close(stop)
	churnWG.Wait()
	checkInvariants(t, h)

	// At most once so far.
	fired := make([]map[string]int, oneShot)
	for i, w := range ws {
		fired[i] = map[string]int{}
		w.mu.Lock()
		for _, ev := range w.evs {
			fired[i][ev.Path]++
			if fired[i][ev.Path] > 1 {
				t.Fatalf("w%d: one-shot watch on %s fired twice", w.id, ev.Path)
			}
		}
		w.evs = nil
		w.mu.Unlock()
	}

	// Delete everything: each one-shot watch that has not fired fires now, exactly once.
	for s := 0; s < shards; s++ {
		var batch []shard.Event
		for _, p := range paths[s] {
			batch = append(batch, shard.Event{Type: wire.EventNodeDeleted, Path: p, ACL: wire.OpenACLUnsafe})
		}
		h.Trigger(batch)
	}
	for i, w := range ws {
		for _, ev := range w.evs {
			fired[i][ev.Path]++
		}
		for _, p := range all {
			if fired[i][p] != 1 {
				t.Errorf("w%d: one-shot watch on %s fired %d times in total", w.id, p, fired[i][p])
			}
		}
	}
	for _, e := range dump(h) {
		if strings.Contains(e, "=std") {
			t.Errorf("one-shot watch left after its path was deleted: %s", e)
		}
	}
	if got, want := len(dump(h)), 3; got != want {
		t.Errorf("%d entries left, want the %d persistent ones: %q", got, want, dump(h))
	}
	checkInvariants(t, h)
	for _, w := range append(ws, pers...) {
		h.RemoveWatcher(w)
	}
	checkEmpty(t, h)
}

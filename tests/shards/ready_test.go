package shardstest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestReadyZnodePattern: ZooKeeper's ready-znode idiom works when /ready and the configuration
// live on different shards. The writer, in each round g, deletes /ready, sets /cfg/1..N to g and
// creates /ready with data g; a reader on another server that sees /ready with generation g
// then reads every /cfg/i at generation g or later.
//
// /ready is a top-level znode on a non-root shard (so its delete and create are themselves
// cross-shard transactions with the root shard), /cfg a top-level znode on a third shard.
//
// How a broken implementation fails: the reader's server applies the /cfg shard 200 ms late (from
// the start), while its replicas of /ready's shard and of the root shard are current. A read
// of /cfg/i served from the lagging replica without first catching up to the zxid of the /ready
// the session saw returns generation g-1; so does an implementation whose writer's server
// proposed the create of /ready before the /cfg writes were applied.
func TestReadyZnodePattern(t *testing.T) { bothModes(t, testReadyZnodePattern) }

func testReadyZnodePattern(t *testing.T, m mode) {
	ns := nonRoot()
	c := startEnsemble(t, m, lag{server: 2, shard: ns[1], d: 200 * time.Millisecond}) // the reader's server, /cfg's shard
	addrs := c.Addrs()
	names := namesOn(t, c, "rd", ns[0], ns[1])
	ready, cfg := "/"+names[0], "/"+names[1]
	const nCfg, rounds = 3, 6
	items := make([]string, nCfg)
	w := connectZK(t, addrs[0])
	mustCreate(t, w, cfg, "")
	for i := range items {
		items[i] = fmt.Sprintf("%s/%d", cfg, i+1)
		mustCreate(t, w, items[i], "0")
	}
	mustCreate(t, w, ready, "0")
	r := connectZK(t, addrs[2])
	syncAll(t, r, ready, cfg)

	var (
		wg   sync.WaitGroup
		werr error
		done = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for g := 1; g <= rounds; g++ {
			if err := w.Delete(ready, -1); err != nil {
				werr = fmt.Errorf("round %d: delete %s: %v", g, ready, err)
				return
			}
			for _, p := range items {
				if _, err := w.Set(p, []byte(strconv.Itoa(g)), -1); err != nil {
					werr = fmt.Errorf("round %d: set %s: %v", g, p, err)
					return
				}
			}
			if _, err := w.Create(ready, []byte(strconv.Itoa(g)), 0, acl); err != nil {
				werr = fmt.Errorf("round %d: create %s: %v", g, ready, err)
				return
			}
			time.Sleep(300 * time.Millisecond) // let the reader see this generation
		}
	}()

	seen := map[int]bool{}
	var failure string
	for finished := false; !finished && failure == ""; {
		select {
		case <-done:
			finished = true // one more pass after the writer ended
		default:
		}
		d, _, err := r.Get(ready)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			failure = fmt.Sprintf("reader: get %s: %v", ready, err)
			break
		}
		g, err := strconv.Atoi(string(d))
		if err != nil {
			failure = fmt.Sprintf("reader: %s holds %q", ready, d)
			break
		}
		seen[g] = true
		for _, p := range items {
			v, _, err := readInt(r, p)
			if err != nil {
				failure = fmt.Sprintf("reader: %v", err)
				break
			}
			if v < g {
				failure = fmt.Sprintf("reader on server 3 saw %s of generation %d, then read %s = %d", ready, g, p, v)
				break
			}
		}
	}
	wg.Wait()
	if failure != "" {
		t.Fatal(failure)
	}
	if werr != nil {
		t.Fatal(werr)
	}
	fresh := 0
	for g := range seen {
		if g > 0 {
			fresh++
		}
	}
	if fresh < 2 {
		t.Fatalf("the reader saw only generations %v of %s: too few to show anything", seen, ready)
	}
	t.Logf("the reader saw %d of %d generations of %s", fresh, rounds, ready)
}

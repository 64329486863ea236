package shardstest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/router"
)

// TestStuckTransactionRecovered: when the server coordinating cross-shard transactions stops
// between a prepare and a commit, no shard stays blocked — every shard accepts writes again
// within 5 s (a prepared transaction's deadline is router.TxnDeadline, 1 s, the recovery scan
// runs every 0.2 s, plus a leader election for the shards the stopped server led) — and every
// transaction is applied on all its participants or on none.
//
// Stopping a server exactly between prepare and commit cannot be timed from a client, so six
// sessions on server 1 issue cross-shard multis back to back (each creates a node on three
// non-root shards and a top-level node, whose entry in "/" is on the root shard), server 1
// applies one of the shards 100 ms late (which keeps each transaction prepared on the other
// participants for that long), and server 1 is stopped in the middle (closed in process, SIGKILL
// as a process). The test logs, in process, how many shards held a transaction prepared right
// after the stop (the case that matters).
//
// How a broken implementation fails: without recovery, a shard whose coordinator died holds its
// prepared transaction forever and refuses every other write (the writes below time out);
// recovery that decided per participant instead of at the anchor could commit a multi on some
// shards and abort it on others (some of its nodes exist, others not); a top-level create
// applied on one side only leaves "/" listing a name that does not exist, or the reverse.
func TestStuckTransactionRecovered(t *testing.T) { bothModes(t, testStuckTransactionRecovered) }

func testStuckTransactionRecovered(t *testing.T, m mode) {
	ns := nonRoot()
	// Server 1 applies the first parent's shard 100 ms late: its coordinator waits for its
	// local apply of each prepare and commit there, so every transaction stays prepared on its
	// other participants for a while, and stopping the server catches some between prepare and
	// commit.
	c := startEnsemble(t, m, lag{server: 0, shard: ns[0], d: 100 * time.Millisecond})
	addrs := c.Addrs()
	names := namesOn(t, c, "tr", ns[0], ns[1], ns[2], rootShard, ns[1], rootShard)
	parents := []string{"/" + names[0], "/" + names[1], "/" + names[2]}
	rootNode := "/" + names[3]
	mountProbe, rootProbe := "/"+names[4], "/"+names[5] // created after the stop
	admin := connectZK(t, addrs[1])
	for _, p := range append(slices.Clone(parents), rootNode) {
		mustCreate(t, admin, p, "")
	}

	type outcome int
	const (
		acked outcome = iota
		refused
		unknown
	)
	type txn struct {
		paths []string // the multi's creates; paths[3] is top-level
		out   outcome
		err   error
	}
	const sessions = 6
	var (
		mu   sync.Mutex
		txns []*txn
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	// The sessions reach server 1 through a proxy, which sends them to server 2 once server 1
	// is gone (so that closing them at the end is quick).
	p := newProxy(t, addrs[0])
	for s := 0; s < sessions; s++ {
		zc := connectZK(t, p.Addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tx := &txn{}
				for _, p := range parents {
					tx.paths = append(tx.paths, fmt.Sprintf("%s/s%d-%d", p, s, i))
				}
				tx.paths = append(tx.paths, fmt.Sprintf("/ts%dx%d", s, i))
				ops := make([]any, len(tx.paths))
				for k, p := range tx.paths {
					ops[k] = &zk.CreateRequest{Path: p, Data: []byte("t"), Acl: acl}
				}
				_, err := zc.Multi(ops...)
				switch {
				case err == nil:
					tx.out = acked
				case isConnLoss(err):
					tx.out = unknown
				default:
					tx.out, tx.err = refused, err
				}
				mu.Lock()
				txns = append(txns, tx)
				mu.Unlock()
				if tx.out == unknown {
					return // the server is gone; go-zookeeper would move the session elsewhere
				}
			}
		}()
	}
	time.Sleep(time.Second)
	stopStart := time.Now()
	c.Stop(0)
	stopped := time.Now()
	p.SetTarget(addrs[1])
	prepared := "unknown (separate processes)"
	if r := c.router(1); r != nil {
		n := 0
		for _, id := range dataShards {
			if v := r.Shard(id).View(); v != nil {
				if _, ok := v.Prepared(); ok {
					n++
				}
			}
		}
		prepared = fmt.Sprint(n)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	nTx := len(txns)
	mu.Unlock()
	t.Logf("server 1 stopped after %d multis (Stop took %v); right after, server 2 held a prepared transaction on %s of %d shards",
		nTx, stopped.Sub(stopStart).Round(time.Millisecond), prepared, len(dataShards))

	// Every shard accepts a write again: a setData on each, a top-level create on the root shard
	// and a mount point create (the root shard and another).
	type probe struct {
		what string
		do   func(zc *zk.Conn) error
	}
	createProbe := func(path string) func(zc *zk.Conn) error {
		return func(zc *zk.Conn) error {
			_, err := zc.Create(path, nil, 0, acl)
			if errors.Is(err, zk.ErrNodeExists) {
				return nil // an earlier attempt's outcome was unknown, and it had succeeded
			}
			return err
		}
	}
	probes := []probe{{"create a top-level node on the root shard", createProbe(rootProbe)},
		{"create a mount point", createProbe(mountProbe)}}
	for _, p := range append(slices.Clone(parents), rootNode) {
		probes = append(probes, probe{"setData " + p, func(zc *zk.Conn) error {
			_, err := zc.Set(p, []byte("after"), -1)
			return err
		}})
	}
	// The deadline, plus room for recovery rounds and elections (5 s with the 1 s deadline).
	bound := router.TxnDeadline + 4*time.Second
	var pwg sync.WaitGroup
	took := make([]time.Duration, len(probes))
	errs := make([]error, len(probes))
	for i, pr := range probes {
		zc := connectZK(t, addrs[1+i%2])
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for {
				err := pr.do(zc)
				if err == nil {
					took[i] = time.Since(stopped)
					return
				}
				if time.Since(stopped) > 3*bound {
					errs[i] = err
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	pwg.Wait()
	for i, pr := range probes {
		if errs[i] != nil {
			t.Errorf("%s: still failing %v after the stop: %v", pr.what, 3*bound, errs[i])
		} else if took[i] > bound {
			t.Errorf("%s: succeeded only %v after the stop (bound %v)", pr.what, took[i].Round(time.Millisecond), bound)
		}
	}
	t.Logf("writes accepted again after the stop: %v", roundAll(took))

	// Atomicity, on both remaining servers.
	for srv := 1; srv <= 2; srv++ {
		zc := connectZK(t, addrs[srv])
		syncAll(t, zc, append(slices.Clone(parents), rootNode, "/")...)
		kids := children(t, zc, "/")
		counts := map[outcome][3]int{} // all, none, partial
		for _, tx := range txns {
			n := 0
			var have []string
			for _, p := range tx.paths {
				ok, _, err := zc.Exists(p)
				must(t, err, "exists %s", p)
				if ok {
					n++
					have = append(have, p)
				}
			}
			top := tx.paths[len(tx.paths)-1]
			exists := slices.Contains(have, top)
			if listed := slices.Contains(kids, top[1:]); listed != exists {
				t.Errorf("server %d: %s exists=%v but getChildren(/) lists it=%v", srv+1, top, exists, listed)
			}
			k := counts[tx.out]
			switch n {
			case len(tx.paths):
				k[0]++
			case 0:
				k[1]++
			default:
				k[2]++
				t.Errorf("server %d: multi %v applied partially: only %v exist", srv+1, tx.paths, have)
			}
			counts[tx.out] = k
			if tx.out == acked && n != len(tx.paths) {
				t.Errorf("server %d: acknowledged multi %v: only %v exist", srv+1, tx.paths, have)
			}
			if tx.out == refused && n != 0 {
				t.Errorf("server %d: multi %v failed with %v but %v exist", srv+1, tx.paths, tx.err, have)
			}
		}
		t.Logf("server %d: [all, none, partial] per outcome: acknowledged %v, refused %v, unknown %v",
			srv+1, counts[acked], counts[refused], counts[unknown])
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}

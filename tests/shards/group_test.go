package shardstest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/client"
	"github.com/corral/corral/format"
	"github.com/corral/corral/router"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// TestSessionPipelinesAcrossShards: one session pipelines writes round-robin over subtrees on
// all four shards (the everyday pattern of a Kafka-like client without a chroot), and they
// behave as the same requests sent one at a time would, in ZooKeeper's order:
//   - every reply arrives in request order with the result the request alone would have had: a
//     create of a node that an earlier request of the pipeline created fails with NODEEXISTS and
//     the writes around it succeed; a setData of a node created earlier in the pipeline finds it
//     (version 1); a delete of a missing node fails with NONODE;
//   - the reply zxids strictly increase in request order, across shards;
//   - another server reads every node the session created, with its data; the ephemerals are
//     gone once the session closes.
//
// It also checks that the writes ran in groups (server/group.go): a write whose zxid carries
// another shard's tag than its own path's shard was committed by a transaction anchored
// elsewhere. Without groups every write of the pipeline is proposed to its own shard after a
// barrier, and every zxid carries its shard's tag: a server that fell back to the barrier for
// all of them would fail here, not pass slowly.
func TestSessionPipelinesAcrossShards(t *testing.T) {
	addrs, names, rc := groupSession(t, "gp")
	tagOf := map[string]int64{}
	for i, n := range names {
		tagOf[n] = int64(i + 1) // placement's tags: data shard i has tag i+1
	}
	type reply struct {
		seq  int
		path string
		zxid int64
		err  error
	}
	type request struct {
		desc    string
		top     string // the top-level name the request's path is under
		wantErr error
		send    func(done func(r reply))
	}
	var reqs []request
	created := map[string]string{}   // path -> data
	ephemeral := map[string]string{} // path -> its top-level znode
	const rounds = 12
	for i := 0; i < rounds; i++ {
		for k, n := range names {
			p := fmt.Sprintf("/%s/n%d", n, i)
			data := strconv.Itoa(i*10 + k)
			flags := wire.FlagPersistent
			if i%3 == 2 {
				flags = wire.FlagEphemeral
				ephemeral[p] = "/" + n
			} else {
				created[p] = data
			}
			reqs = append(reqs, request{desc: "create " + p, top: n, send: func(done func(reply)) {
				rc.CreateAsync(p, []byte(data), flags, nil, func(path string, st wire.Stat, err error) {
					done(reply{path: path, zxid: st.Czxid, err: err})
				})
			}})
		}
		if i == 4 {
			// A duplicate of a create earlier in the pipeline, a setData of a node created
			// earlier in it, and a delete of a node that does not exist.
			dup := fmt.Sprintf("/%s/n%d", names[1], 2)
			set := fmt.Sprintf("/%s/n%d", names[2], 3)
			missing := fmt.Sprintf("/%s/none", names[3])
			created[set] = "changed"
			reqs = append(reqs,
				request{desc: "create " + dup + " again", top: names[1], wantErr: wire.ErrNodeExists, send: func(done func(reply)) {
					rc.CreateAsync(dup, nil, wire.FlagPersistent, nil, func(path string, st wire.Stat, err error) {
						done(reply{err: err})
					})
				}},
				request{desc: "setData " + set, top: names[2], send: func(done func(reply)) {
					rc.SetDataAsync(set, []byte("changed"), 0, func(st wire.Stat, err error) {
						if err == nil && st.Version != 1 {
							err = fmt.Errorf("version %d, want 1", st.Version)
						}
						done(reply{zxid: st.Mzxid, err: err})
					})
				}},
				request{desc: "delete " + missing, top: names[3], wantErr: wire.ErrNoNode, send: func(done func(reply)) {
					rc.DeleteAsync(missing, -1, func(err error) { done(reply{err: err}) })
				}},
			)
		}
	}

	var (
		mu      sync.Mutex
		replies []reply
		all     = make(chan struct{})
	)
	for seq, r := range reqs {
		r.send(func(rep reply) {
			mu.Lock()
			defer mu.Unlock()
			rep.seq = seq
			replies = append(replies, rep)
			if len(replies) == len(reqs) {
				close(all)
			}
		})
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d pipelined writes did not all complete", len(reqs))
	}

	mu.Lock()
	defer mu.Unlock()
	var prev int64
	foreign := 0
	for k, rep := range replies {
		r := reqs[k]
		if rep.seq != k {
			t.Fatalf("reply %d is for request %d: replies out of order", k, rep.seq)
		}
		if r.wantErr != nil {
			if !errors.Is(rep.err, r.wantErr) {
				t.Fatalf("request %d (%s): %v, want %v", k, r.desc, rep.err, r.wantErr)
			}
			continue
		}
		if rep.err != nil {
			t.Fatalf("request %d (%s): %v", k, r.desc, rep.err)
		}
		if rep.zxid <= prev {
			t.Fatalf("request %d (%s): zxid %#x not above the previous write's %#x", k, r.desc, rep.zxid, prev)
		}
		prev = rep.zxid
		if rep.zxid&0xff != tagOf[r.top] {
			foreign++
		}
	}
	if foreign == 0 {
		t.Fatalf("all %d writes carry their own shard's zxid tag: none ran in a group", len(reqs))
	}
	t.Logf("%d pipelined writes over %d shards, %d committed by a group anchored on another shard", len(reqs), len(names), foreign)

	// Every node is on another server, with its data; the ephemerals go with the session.
	obs := connectZK(t, addrs[1])
	syncAll(t, obs, "/"+names[0], "/"+names[1], "/"+names[2], "/"+names[3])
	for p, want := range created {
		got, _, err := obs.Get(p)
		if err != nil || string(got) != want {
			t.Fatalf("server 2: get %s = %q, %v; want %q", p, got, err, want)
		}
	}
	for p := range ephemeral {
		if ok, _, err := obs.Exists(p); err != nil || !ok {
			t.Fatalf("server 2: ephemeral %s: exists %v, %v", p, ok, err)
		}
	}
	rc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for p, top := range ephemeral {
		for {
			syncAll(t, obs, top)
			ok, _, err := obs.Exists(p)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ephemeral %s still there after its session closed", p)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// groupSession starts an in-process ensemble at its newest format level (groups need 4), creates one
// top-level znode per data shard (prefix plus a number, in shard order) and dials a raw client
// session to server 1, whose pipelined writes over those subtrees run in groups.
func groupSession(t *testing.T, prefix string) (addrs, names []string, rc *client.Conn) {
	t.Helper()
	c := startEnsemble(t, inProcess)
	addrs = c.Addrs()
	names = namesOn(t, c, prefix, dataShards...)
	waitFormatLevel(t, c.(*inproc), format.Supported)
	zc := connectZK(t, addrs[0])
	for _, n := range names {
		mustCreate(t, zc, "/"+n, "")
	}
	return addrs, names, dialRaw(t, addrs[0], client.Options{})
}

// waitFormatLevel waits until every server's session table holds at least level active: a new
// ensemble starts at level 1 and raises it once every server announced what it reads.
func waitFormatLevel(t *testing.T, c *inproc, level format.Level) {
	t.Helper()
	// The ensemble moves straight to the level every server announced, which may be above level.
	want := fmt.Sprintf("format level=%d ", format.Supported)
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < numServers; i++ {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			text, err := c.c.Server(i).MembersText(ctx)
			cancel()
			if err == nil && strings.Contains(text, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d did not reach format level %d (%s): %q, %v", i+1, format.Supported, level, text, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestStuckGroupRecovered: when the server running sessions' groups (server/group.go) stops
// between a group's prepares and its commits, no shard stays blocked (every shard takes a write
// again within 5 s: the deadline, the recovery scan, an election), and every session's writes
// that applied are a prefix of what it sent, with every acknowledged one among them: a group
// applies on all its participants or on none (recovery probes them all: router.recoverGroup).
//
// Four sessions on server 1 send bursts of creates round-robin over subtrees on the three
// non-root shards, which become group transactions; server 1 applies one of those shards
// 100 ms late, which keeps each group prepared on the others for that long, and is stopped in
// the middle. How a broken recovery fails: a group committed on the shards that had it prepared
// and aborted where the prepare never arrived leaves a session's later create without its
// earlier ones (a gap), or an acknowledged create missing; a shard left prepared refuses the
// writes after the stop.
func TestStuckGroupRecovered(t *testing.T) {
	ns := nonRoot()
	c := startEnsemble(t, inProcess, lag{server: 0, shard: ns[0], d: 100 * time.Millisecond})
	waitFormatLevel(t, c.(*inproc), format.Supported)
	addrs := c.Addrs()
	names := namesOn(t, c, "gr", ns[0], ns[1], ns[2])
	admin := connectZK(t, addrs[1])
	for _, n := range names {
		mustCreate(t, admin, "/"+n, "")
	}
	const sessions, burst = 4, 12
	type stream struct {
		mu    sync.Mutex
		sent  int
		acked map[int]bool
	}
	streams := make([]*stream, sessions)
	path := func(s, n int) string { return fmt.Sprintf("/%s/s%d-%d", names[n%len(names)], s, n) }
	var wg sync.WaitGroup
	for s := range streams {
		st := &stream{acked: map[int]bool{}}
		streams[s] = st
		rc := dialRaw(t, addrs[0], client.Options{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; {
				var bw sync.WaitGroup
				broken := false
				for k := 0; k < burst; k, n = k+1, n+1 {
					n := n
					st.mu.Lock()
					st.sent = n + 1
					st.mu.Unlock()
					bw.Add(1)
					rc.CreateAsync(path(s, n), nil, wire.FlagPersistent, nil, func(_ string, _ wire.Stat, err error) {
						defer bw.Done()
						st.mu.Lock()
						defer st.mu.Unlock()
						if err == nil {
							st.acked[n] = true
						} else {
							broken = true
						}
					})
				}
				bw.Wait()
				st.mu.Lock()
				stop := broken
				st.mu.Unlock()
				if stop {
					return // the server is gone
				}
			}
		}()
	}
	time.Sleep(time.Second)
	c.Stop(0)
	groups := 0
	if r := c.router(1); r != nil {
		for _, id := range dataShards {
			if v := r.Shard(id).View(); v != nil {
				if info, ok := v.Prepared(); ok && info.Group {
					groups++
				}
			}
		}
	}
	wg.Wait()
	t.Logf("right after server 1 stopped, server 2 held a group prepared on %d of %d shards", groups, len(dataShards))

	// Every shard takes a write again.
	deadline := time.Now().Add(5 * time.Second)
	for _, n := range names {
		for {
			_, err := admin.Create("/"+n+"/after", nil, 0, acl)
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("/%s: no write within 5 s of the stop: %v", n, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	applied := map[string]bool{}
	for _, n := range names {
		syncAll(t, admin, "/"+n)
		kids, _, err := admin.Children("/" + n)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			applied["/"+n+"/"+k] = true
		}
	}
	total := 0
	for s, st := range streams {
		st.mu.Lock()
		last := -1
		for n := 0; n < st.sent; n++ {
			if applied[path(s, n)] {
				last = n
			}
		}
		for n := 0; n < last; n++ {
			if !applied[path(s, n)] {
				t.Errorf("session %d: %s missing but the later %s applied", s, path(s, n), path(s, last))
				break
			}
		}
		for n := range st.acked {
			if !applied[path(s, n)] {
				t.Errorf("session %d: acknowledged %s missing", s, path(s, n))
			}
		}
		total += last + 1
		st.mu.Unlock()
	}
	t.Logf("%d creates applied over %d sessions", total, sessions)
}

// TestGroupRecoveryDecidesLikeItsCoordinator: a group transaction left prepared is resolved by
// probing every participant (router.recoverGroup), which must decide what its coordinator
// would have: committed wherever one participant committed it, aborted everywhere when one
// never prepared it. The coordinator's steps are replayed by hand through server 2's control
// proposers (its router, in process), so that the cases a crash only sometimes leaves are
// there every time:
//   - committed on one participant that is not the anchor, prepared on the others: a
//     recovery that asked the anchor (undecided, so it aborts) would leave the create on one
//     shard only;
//   - prepared on two participants, never on the third: the third is fenced (its late
//     prepare fails) and the other two abort.
func TestGroupRecoveryDecidesLikeItsCoordinator(t *testing.T) {
	ns := nonRoot()
	c := startEnsemble(t, inProcess)
	waitFormatLevel(t, c.(*inproc), format.Supported)
	r := c.router(1)
	names := namesOn(t, c, "rc", ns[0], ns[1], ns[2])
	admin := connectZK(t, c.Addrs()[1])
	for _, n := range names {
		mustCreate(t, admin, "/"+n, "")
	}
	parts := []uint64{ns[0], ns[1], ns[2]} // ascending: ns[0] is the anchor
	control := func(id uint64, op shard.Op) shard.TxnReply {
		t.Helper()
		done := make(chan shard.TxnReply, 1)
		r.Shard(id).Control.Submit(&router.Request{Op: op, Done: func(res shard.OpResult, err error) {
			if err != nil || res.Err != wire.ErrOK {
				t.Errorf("shard %d: %v %v", id, err, res.Err)
				done <- shard.TxnReply{}
				return
			}
			rep, err := shard.DecodeTxnReply(res.Body)
			if err != nil {
				t.Error(err)
			}
			done <- rep
		}})
		select {
		case rep := <-done:
			return rep
		case <-time.After(10 * time.Second):
			t.Fatalf("shard %d: no reply", id)
			return shard.TxnReply{}
		}
	}
	group := func(txnID uint64, leaf string) (map[uint64]shard.Op, []string) {
		deadline := time.Now().Add(2 * time.Second)
		var m wire.MultiRequest
		var paths []string
		for _, n := range names {
			p := "/" + n + "/" + leaf
			paths = append(paths, p)
			m.Ops = append(m.Ops, wire.MultiOp{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: p, ACL: wire.OpenACLUnsafe}})
		}
		ops := map[uint64]shard.Op{}
		for i, id := range parts {
			roles := make([]shard.TxnRole, len(parts))
			roles[i] = shard.RoleFull
			// Recovery may resolve the group once the deadline passed: late enough that every
			// prepare (and the commit) this test sends comes first on a loaded machine.
			p := shard.TxnPrepare{ID: txnID, Anchor: parts[0], Deadline: deadline.UnixMilli(), Internal: true,
				Multi: m, Roles: roles, Group: true, Parts: parts}
			ops[id] = shard.Op{Code: shard.OpTxnPrepare, Body: p.AppendTo(nil)}
		}
		return ops, paths
	}
	exists := func(paths []string) []bool {
		out := make([]bool, len(paths))
		for i, p := range paths {
			syncAll(t, admin, p[:strings.LastIndex(p, "/")])
			ok, _, err := admin.Exists(p)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = ok
		}
		return out
	}
	resolved := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for _, id := range parts {
			for {
				v := r.Shard(id).View()
				if _, ok := v.Prepared(); !ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("shard %d still holds the group prepared", id)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}

	// Committed on ns[2] (not the anchor), prepared on the others.
	prepares, paths := group(0x5eed1, "one")
	var floor int64
	for _, id := range parts {
		rep := control(id, prepares[id])
		if rep.Outcome != shard.TxnPrepared {
			t.Fatalf("prepare on shard %d: %+v", id, rep)
		}
		floor = max(floor, rep.Floor)
	}
	z := floor<<8 | int64(r.Shard(parts[0]).Tag())
	if rep := control(ns[2], shard.Op{Code: shard.OpTxnCommit, Body: (&shard.TxnCommit{ID: 0x5eed1, Zxid: z, Time: router.CommitTime(z)}).AppendTo(nil)}); rep.Outcome != shard.TxnCommitted {
		t.Fatalf("commit on shard %d: %+v", ns[2], rep)
	}
	resolved()
	if got := exists(paths); !got[0] || !got[1] || !got[2] {
		t.Fatalf("committed on one participant: after recovery the creates exist %v, want on all", got)
	}

	// Prepared on ns[0] and ns[1] only.
	prepares, paths = group(0x5eed2, "two")
	for _, id := range parts[:2] {
		if rep := control(id, prepares[id]); rep.Outcome != shard.TxnPrepared {
			t.Fatalf("prepare on shard %d: %+v", id, rep)
		}
	}
	resolved()
	if got := exists(paths); got[0] || got[1] || got[2] {
		t.Fatalf("never prepared on one participant: after recovery the creates exist %v, want on none", got)
	}
	if rep := control(ns[2], prepares[ns[2]]); rep.Outcome != shard.TxnAborted {
		t.Fatalf("the late prepare on the fenced participant: %+v, want aborted", rep)
	}
}

// TestConcurrentGroupsAllProgress: sessions that pipeline creates over the same subtrees on
// every shard at once (many brokers writing /brokers, /config, /admin ...) all complete,
// without errors or closed connections, each session's zxids increasing in its order. Their
// groups meet each other on the shards' single prepared slot; a group that meets another is
// aborted and its writes go one shard at a time (router.ErrGroupBusy, server runInOrder).
// This in-process run passes with groups retried as transactions too (slower); the case that
// failed then, and why the fallback exists, was a longer run against `corral local`
// (docs/benchmarks.md, "Concurrent groups").
func TestConcurrentGroupsAllProgress(t *testing.T) {
	ns := nonRoot()
	c := startEnsemble(t, inProcess)
	waitFormatLevel(t, c.(*inproc), format.Supported)
	addrs := c.Addrs()
	names := namesOn(t, c, "cg", append(append(ns, rootShard), append(ns, rootShard)...)...)
	admin := connectZK(t, addrs[1])
	for _, n := range names {
		mustCreate(t, admin, "/"+n, "")
	}
	const sessions, perSession, inFlight = 8, 300, 32
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := 0; s < sessions; s++ {
		rc := dialRaw(t, addrs[s%len(addrs)], client.Options{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			zxids := make([]int64, perSession)
			var failed error
			var mu sync.Mutex
			var bw sync.WaitGroup
			sem := make(chan struct{}, inFlight)
			for n := 0; n < perSession; n++ {
				sem <- struct{}{}
				bw.Add(1)
				p := fmt.Sprintf("/%s/s%d-%d", names[n%len(names)], s, n)
				rc.CreateAsync(p, nil, wire.FlagPersistent, nil, func(_ string, st wire.Stat, err error) {
					defer bw.Done()
					<-sem
					mu.Lock()
					defer mu.Unlock()
					if err != nil && failed == nil {
						failed = fmt.Errorf("session %d: create %s: %w", s, p, err)
					}
					zxids[n] = st.Czxid
				})
			}
			bw.Wait()
			if failed != nil {
				errs <- failed
				return
			}
			for n := 1; n < perSession; n++ {
				if zxids[n] <= zxids[n-1] {
					errs <- fmt.Errorf("session %d: create %d has zxid %#x, not above create %d's %#x", s, n, zxids[n], n-1, zxids[n-1])
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the sessions' creates did not complete within 60 s")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

package clustertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/client"
	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/internal/zktest"
	"github.com/corral/corral/router"
	"github.com/corral/corral/wire"
)

// TestOnlineMove: a subtree moves to another shard, and back to the root shard, while clients
// write and read it. Invariants checked: no acknowledged write is lost and no write fails; a
// reader never sees the subtree vanish or a value go back; stats (czxid, mzxid, version,
// cversion) are unchanged by the move; watches set before the move fire for changes after it;
// sequential names continue; an ephemeral moved with the subtree goes when its session closes;
// every server routes the subtree to the new shard; a path that does not exist yet can be
// mounted on a shard and created there.
func TestOnlineMove(t *testing.T) {
	ids := []uint64{2, 3, 4, 5}
	name := ""
	for _, n := range []string{"app", "web", "db", "q", "r", "s", "t"} {
		if router.TopLevelShard(n, ids) != ids[0] {
			name = n
			break
		}
	}
	top := "/" + name
	from := router.TopLevelShard(name, ids)
	to := uint64(0)
	for _, id := range ids[1:] {
		if id != from {
			to = id
			break
		}
	}
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 4, Admin: true})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	acl := zk.WorldACL(zk.PermAll)
	c := zktest.Connect(t, ctx, cl.Addrs()[0])
	w := zktest.Connect(t, ctx, cl.Addrs()[1])
	owner := zktest.Connect(t, ctx, cl.Addrs()[2])
	for _, p := range []string{top, top + "/static", top + "/x"} {
		if _, err := c.Create(p, []byte("v0"), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := owner.Create(top+"/eph", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	const keys = 6
	for i := 0; i < keys; i++ {
		if _, err := c.Create(fmt.Sprintf("%s/k%d", top, i), []byte("0"), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	seq1, err := c.Create(top+"/s-", nil, zk.FlagSequence, acl)
	if err != nil {
		t.Fatal(err)
	}
	_, staticBefore, err := c.Get(top + "/static")
	if err != nil {
		t.Fatal(err)
	}
	_, topBefore, _ := c.Get(top)

	// Load: two writers (on servers 0 and 2) bump counters and record what was acknowledged;
	// a reader on server 1 checks the subtree never vanishes and values never go back.
	load := startLoad(t, ctx, top, keys, [2]string{cl.Addrs()[0], cl.Addrs()[2]}, cl.Addrs()[1])

	// Watches set before the move.
	_, _, dataW, err := w.GetW(top + "/x")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childW, err := w.ChildrenW(top)
	if err != nil {
		t.Fatal(err)
	}

	move := func(to uint64) {
		t.Helper()
		time.Sleep(300 * time.Millisecond) // let the load run across the move
		res, err := cl.Server(2).Router().Move(ctx, top, to)
		if err != nil {
			t.Fatalf("move %s to %d: %v", top, to, err)
		}
		t.Logf("moved %s from %d to %d at 0x%x, %d bytes", top, res.From, res.To, res.Zxid, res.Bytes)
		for i := 0; i < 3; i++ {
			deadline := time.Now().Add(10 * time.Second)
			for cl.Server(i).Router().Lookup(top+"/k0").ID != to {
				if time.Now().After(deadline) {
					t.Fatalf("server %d still routes %s to shard %d", i, top, cl.Server(i).Router().Lookup(top).ID)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	move(to)
	if _, err := cl.Server(0).Router().Move(ctx, top, to); !errors.Is(err, router.ErrMoveRefused) {
		t.Fatalf("moving to the shard it is on: %v, want refused", err)
	}

	// After the move: stats kept, watches fire, sequential numbering goes on.
	_, staticAfter, err := w.Get(top + "/static")
	if err != nil {
		t.Fatal(err)
	}
	if *staticAfter != *staticBefore {
		t.Fatalf("stat changed by the move:\n%+v\n%+v", staticBefore, staticAfter)
	}
	if _, topAfter, _ := w.Get(top); topAfter.Czxid != topBefore.Czxid || topAfter.Cversion < topBefore.Cversion {
		t.Fatalf("%s stat: %+v -> %+v", top, topBefore, topAfter)
	}
	if _, err := c.Set(top+"/x", []byte("v1"), -1); err != nil {
		t.Fatal(err)
	}
	var n int
	fmt.Sscanf(seq1[len(top+"/s-"):], "%d", &n)
	if p, err := c.Create(top+"/s-", nil, zk.FlagSequence, acl); err != nil || p != fmt.Sprintf("%s/s-%010d", top, n+1) {
		t.Fatalf("sequential create after the move: %q %v (before it: %s)", p, err, seq1)
	}
	expectWatchEvents(t, "a watch set before the move did not fire for a change after it", dataW, childW)
	kids, _, err := w.Children("/")
	if err != nil || !slices.Contains(kids, name) {
		t.Fatalf("children of /: %v %v", kids, err)
	}

	// Back to the root shard, which holds "/" (its stub of the subtree becomes the node).
	move(ids[0])
	load.finish(t)
	var rerouted int64
	for i := 0; i < 3; i++ {
		rerouted += cl.Server(i).ReroutedWrites()
	}
	t.Logf("%d reads, %d writes sent back by a move and proposed again", load.reads.Load(), rerouted)
	if load.reads.Load() == 0 || rerouted == 0 {
		t.Fatal("the load did not run into the moves: the test exercised nothing")
	}

	// Every acknowledged write is there, on every server.
	for i := 0; i < 3; i++ {
		load.checkAcked(t, ctx, cl.Addrs()[i])
	}

	// The ephemeral moved twice and still goes with its session.
	if ok, _, err := w.Exists(top + "/eph"); err != nil || !ok {
		t.Fatalf("ephemeral after the moves: %v %v", ok, err)
	}
	owner.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, _, err := w.Exists(top + "/eph")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ephemeral outlived its session after the moves")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A path that does not exist yet: mount it on a shard (through the admin endpoint), then
	// create it there.
	fresh := "/fresh-mount"
	resp, err := http.Post(fmt.Sprintf("http://%s/move?path=%s&shard=%d", cl.AdminAddr(1), fresh, to), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /move: %s %s", resp.Status, body)
	}
	resp, err = http.Post(fmt.Sprintf("http://%s/move?path=%s&shard=%d", cl.AdminAddr(0), fresh, to), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("POST /move to where it is: %s, want 409", resp.Status)
	}
	if _, err := c.Create(fresh, []byte("f"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(fresh+"/a", []byte("a"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if got := cl.Server(0).Router().Lookup(fresh + "/a").ID; got != to {
		t.Fatalf("%s/a on shard %d, want %d", fresh, got, to)
	}
	if v := cl.Server(0).Router().Shard(to).View(); v == nil {
		t.Fatal("no view")
	} else if _, ok := v.Get(fresh + "/a"); !ok {
		t.Fatalf("%s/a is not on shard %d", fresh, to)
	}
	if _, err := w.Sync(fresh + "/a"); err != nil { // w is another session on another server
		t.Fatal(err)
	}
	if data, _, err := w.Get(fresh + "/a"); err != nil || string(data) != "a" {
		t.Fatalf("read %s/a from another server: %q %v", fresh, data, err)
	}
}

// TestMoveCoordinatorDies: the server coordinating a move stops half-way, with the move
// prepared on both shards (recovery aborts it at the anchor: the subtree stays), or after the
// anchor committed (recovery commits the other participant: the subtree moves). Either way
// the blocked writes go through after recovery, no acknowledged write is lost, no shard stays
// prepared, and the restarted coordinator routes the subtree where it ended up.
func TestMoveCoordinatorDies(t *testing.T) {
	for _, step := range []string{"prepared", "anchor-committed"} {
		t.Run(step, func(t *testing.T) { testMoveCoordinatorDies(t, step) })
	}
}

func testMoveCoordinatorDies(t *testing.T, step string) {
	ids := []uint64{2, 3, 4, 5}
	name := "app"
	from := router.TopLevelShard(name, ids)
	to := ids[0]
	if from == to {
		to = ids[1]
	}
	top := "/" + name
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	acl := zk.WorldACL(zk.PermAll)
	c := zktest.Connect(t, ctx, cl.Addrs()[0])
	for _, p := range []string{top, top + "/k"} {
		if _, err := c.Create(p, []byte("0"), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	// Before the writer starts: without -tags corraltesting SetTxnHook skips the test.
	reached := make(chan struct{})
	release := make(chan struct{})
	coord := cl.Server(2).Router()
	testcluster.SetTxnHook(t, coord, func(s string) {
		if s == step {
			close(reached)
			<-release
		}
	})
	var stop atomic.Bool
	var acked atomic.Int64
	werr := make(chan error, 1)
	go func() {
		// Each value is written until acknowledged (a connection loss leaves the outcome
		// unknown; writing the same value again is harmless), so the last acknowledged value
		// is the last one written.
		defer close(werr)
		for n := int64(1); !stop.Load(); n++ {
			for {
				_, err := c.Set(top+"/k", []byte(fmt.Sprint(n)), -1)
				if err == nil {
					break
				}
				if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrSessionMoved) {
					werr <- err
					return
				}
			}
			acked.Store(n)
		}
	}()

	moveErr := make(chan error, 1)
	go func() {
		_, err := coord.Move(ctx, top, to)
		moveErr <- err
	}()
	select {
	case <-reached:
	case err := <-moveErr:
		t.Fatalf("move ended before step %s: %v", step, err)
	case <-time.After(20 * time.Second):
		t.Fatalf("move did not reach step %s", step)
	}
	cl.Stop(2)
	close(release)
	if err := <-moveErr; err == nil {
		t.Fatal("the move succeeded on a stopped coordinator")
	}
	before := acked.Load()
	stopped := time.Now()
	deadline := stopped.Add(router.MoveDeadline + 10*time.Second)
	for acked.Load() < before+20 {
		select {
		case err := <-werr:
			t.Fatalf("writer: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes to the subtree did not resume after recovery (%d acknowledged)", acked.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("writes to the subtree resumed %v after the coordinator stopped", time.Since(stopped).Round(10*time.Millisecond))
	stop.Store(true)
	if err := <-werr; err != nil {
		t.Fatalf("writer: %v", err)
	}
	want := from
	if step == "anchor-committed" {
		want = to
	}
	for i := 0; i < 2; i++ {
		r := cl.Server(i).Router()
		for _, sh := range r.Shards() {
			if _, ok := sh.View().Prepared(); ok {
				t.Fatalf("server %d: shard %d still holds a prepared transaction", i, sh.ID)
			}
		}
	}
	cl.Restart(2)
	for i := 0; i < 3; i++ {
		cc := zktest.Connect(t, ctx, cl.Addrs()[i])
		if _, err := cc.Sync(top + "/k"); err != nil {
			t.Fatal(err)
		}
		data, _, err := cc.Get(top + "/k")
		if err != nil || string(data) != fmt.Sprint(acked.Load()) {
			t.Fatalf("server %d: %s/k = %q (%v), last acknowledged %d", i, top, data, err, acked.Load())
		}
		if got := cl.Server(i).Router().Lookup(top + "/k").ID; got != want {
			t.Fatalf("server %d routes %s to shard %d, want %d", i, top, got, want)
		}
	}
}

// TestMoveKeepsFIFO: one session pipelines writes alternately into a subtree that moves and into
// another subtree that stays on the source shard. Its replies' zxids must grow in request
// order: a write into the moving subtree that the source sends back and the destination
// applies must not be overtaken by a later write the source applies (which is what the
// source's fence prevents: it sends back every write issued before the move for a while).
func TestMoveKeepsFIFO(t *testing.T) {
	ids := []uint64{2, 3, 4, 5}
	var moving, staying string
	for _, a := range []string{"app", "web", "db", "q", "r", "s", "t", "u"} {
		from := router.TopLevelShard(a, ids)
		if from == ids[0] {
			continue
		}
		for _, b := range []string{"kv", "cfg", "meta", "locks", "queue", "x1", "x2", "x3"} {
			if router.TopLevelShard(b, ids) == from {
				moving, staying = "/"+a, "/"+b
			}
		}
		if moving != "" {
			break
		}
	}
	if moving == "" {
		t.Fatal("no two names on one shard")
	}
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, []string{cl.Addrs()[0]}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{moving, moving + "/x", staying, staying + "/y"} {
		if _, _, err := c.Create(ctx, p, nil, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var last int64
	var failure error
	var done atomic.Int64
	window := make(chan struct{}, 64)
	var stop atomic.Bool
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; !stop.Load(); i++ {
			path := moving + "/x"
			if i%2 == 1 {
				path = staying + "/y"
			}
			window <- struct{}{}
			c.SetDataAsync(path, []byte(fmt.Sprint(i)), -1, func(st wire.Stat, err error) {
				<-window
				mu.Lock()
				defer mu.Unlock()
				switch {
				case failure != nil:
				case err != nil:
					failure = fmt.Errorf("write %d to %s: %w", i, path, err)
				case st.Mzxid <= last:
					failure = fmt.Errorf("write %d to %s got zxid 0x%x, not above the previous write's 0x%x", i, path, st.Mzxid, last)
				default:
					last = st.Mzxid
				}
				done.Add(1)
			})
		}
		for i := 0; i < cap(window); i++ {
			window <- struct{}{}
		}
	}()
	rerouted := func() int64 {
		var n int64
		for i := 0; i < 3; i++ {
			n += cl.Server(i).ReroutedWrites()
		}
		return n
	}
	// How many writes a move meets depends on timing (under the load of other tests' packages
	// one move met a single write): the subtree moves back and forth, up to 6 times, until the
	// pipeline has run into the moves.
	time.Sleep(300 * time.Millisecond)
	home := router.TopLevelShard(strings.TrimPrefix(moving, "/"), ids)
	var moves []string
	for to := ids[0]; len(moves) < 6 && (len(moves) == 0 || rerouted() < 2); {
		res, err := cl.Server(1).Router().Move(ctx, moving, to)
		if err != nil {
			t.Fatal(err)
		}
		moves = append(moves, fmt.Sprintf("%d→%d", res.From, res.To))
		time.Sleep(300 * time.Millisecond)
		if to == ids[0] {
			to = home
		} else {
			to = ids[0]
		}
	}
	stop.Store(true)
	<-writerDone
	n := rerouted()
	t.Logf("moved %s %v; %d pipelined writes, %d sent back and proposed again", moving, moves, done.Load(), n)
	mu.Lock()
	defer mu.Unlock()
	if failure != nil {
		t.Fatal(failure)
	}
	if n < 2 {
		t.Fatal("the pipeline did not run into the moves: the test exercised nothing")
	}
}

package shardstest

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/client"
	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/wire"
)

// TestReadsParkedBehindWrites: a read a session pipelines behind its own writes to the same
// shard is answered from the state right after the write before it (server/park.go,
// shard.Taps): it sees that write and none of the session's later ones, which the server
// proposed meanwhile, and its reply comes in request order.
//
// One session pipelines, for i = 1..N without waiting: setData(/x/k, i), getData(/x/k),
// exists(/x/k), getChildren(/x). Each getData must return i and each exists version i; the
// children must list the nodes created before it and none after (every fifth round also
// creates /x/c<i> after the reads). The client's server applies the shard 20 ms late, so the
// session's next writes are proposed, and often batched with each other into one Raft entry,
// before the write a read follows is applied there: a read answered from the view published
// after the Update, or from the newest view once the write's reply is due, sees a later
// write (getData returns more than i); one answered before the write applied sees less.
// The server must have parked reads (corral_parked_reads_total), or the test checks nothing.
func TestReadsParkedBehindWrites(t *testing.T) {
	c := &inproc{testcluster.Start(t, testcluster.Options{Servers: numServers, Shards: numShards, Admin: true})}
	names := namesOn(t, c, "pk", nonRoot()[0])
	dir := "/" + names[0]
	key := dir + "/k"
	zc := connectZK(t, c.Addrs()[0])
	mustCreate(t, zc, dir, "")
	mustCreate(t, zc, key, "0")
	testcluster.SetApplyLag(t, c.c.Server(0).Router().Shard(shardOf(dir)), 20*time.Millisecond)
	before := parkedReads(t, c, 0)

	rc := dialRaw(t, c.Addrs()[0], client.Options{})
	const rounds = 60
	type reply struct {
		what string
		i    int
		err  error
		data string
		ver  int32
		kids []string
	}
	var (
		mu      sync.Mutex
		replies []reply
		sent    int
		done    = make(chan struct{})
	)
	record := func(r reply) {
		mu.Lock()
		defer mu.Unlock()
		replies = append(replies, r)
		if len(replies) == sent {
			close(done)
		}
	}
	mu.Lock()
	for i := 1; i <= rounds; i++ {
		sent += 4
		rc.SetDataAsync(key, []byte(strconv.Itoa(i)), -1, func(st wire.Stat, err error) {
			record(reply{what: "setData", i: i, err: err, ver: st.Version})
		})
		rc.GetDataAsync(key, false, func(data []byte, _ wire.Stat, err error) {
			record(reply{what: "getData", i: i, err: err, data: string(data)})
		})
		rc.ExistsAsync(key, false, func(st wire.Stat, err error) {
			record(reply{what: "exists", i: i, err: err, ver: st.Version})
		})
		rc.ChildrenAsync(dir, false, func(kids []string, _ wire.Stat, err error) {
			record(reply{what: "getChildren", i: i, err: err, kids: kids})
		})
		if i%5 == 0 {
			sent++
			rc.CreateAsync(fmt.Sprintf("%s/c%d", dir, i), nil, wire.FlagPersistent, nil, func(_ string, _ wire.Stat, err error) {
				record(reply{what: "create", i: i, err: err})
			})
		}
	}
	mu.Unlock()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%d pipelined requests did not all complete", sent)
	}

	mu.Lock()
	defer mu.Unlock()
	var order []string
	for _, r := range replies {
		order = append(order, fmt.Sprintf("%s%d", r.what, r.i))
		if r.err != nil {
			t.Fatalf("%s of round %d: %v", r.what, r.i, r.err)
		}
		switch r.what {
		case "setData":
			if r.ver != int32(r.i) {
				t.Fatalf("setData of round %d: version %d", r.i, r.ver)
			}
		case "getData":
			if r.data != strconv.Itoa(r.i) {
				t.Fatalf("getData of round %d returned %q: not the session's write just before it", r.i, r.data)
			}
		case "exists":
			if r.ver != int32(r.i) {
				t.Fatalf("exists of round %d: version %d, want %d", r.i, r.ver, r.i)
			}
		case "getChildren":
			want := 1 + (r.i-1)/5 // k, and c5, c10, ... created in earlier rounds
			if len(r.kids) != want {
				t.Fatalf("getChildren of round %d: %v, want %d children", r.i, r.kids, want)
			}
		}
	}
	// The client fails a reply out of xid order; check the order it saw all the same.
	var want []string
	for i := 1; i <= rounds; i++ {
		want = append(want, fmt.Sprintf("setData%d", i), fmt.Sprintf("getData%d", i), fmt.Sprintf("exists%d", i), fmt.Sprintf("getChildren%d", i))
		if i%5 == 0 {
			want = append(want, fmt.Sprintf("create%d", i))
		}
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Fatalf("replies out of request order:\n got %v\nwant %v", order, want)
	}
	if n := parkedReads(t, c, 0) - before; n < rounds {
		t.Fatalf("server 1 parked %d reads of the %d pipelined behind writes: the test did not exercise parking", n, 3*rounds)
	} else {
		t.Logf("%d of %d reads parked", n, 3*rounds)
	}
}

// parkedReads reads corral_parked_reads_total from server i's /metrics.
func parkedReads(t *testing.T, c *inproc, i int) int {
	t.Helper()
	v, err := c.c.Metric(i, "corral_parked_reads_total")
	if err != nil {
		t.Fatal(err)
	}
	return int(v)
}

// TestParkedReadsAcrossLeaderChanges: the same pipelined session as TestReadsParkedBehindWrites
// while the shard's leadership moves between the servers every 30 ms. Batches are then proposed
// again after leader changes and may be applied on the client's replica from a duplicate or a
// new leader's log; a parked read must still see exactly its session's write before it, or its
// connection must close (its write's batch settled without this replica applying it in order):
// no reply may carry another value. The test fails if no leader change happened during the run
// or no read parked (it would have checked nothing), and if no reply failed while some round
// was not answered in full.
func TestParkedReadsAcrossLeaderChanges(t *testing.T) {
	c := &inproc{testcluster.Start(t, testcluster.Options{Servers: numServers, Shards: numShards, Admin: true})}
	names := namesOn(t, c, "pl", nonRoot()[1])
	dir := "/" + names[0]
	key := dir + "/k"
	zc := connectZK(t, c.Addrs()[0])
	mustCreate(t, zc, dir, "")
	mustCreate(t, zc, key, "0")
	id := shardOf(dir)
	testcluster.SetApplyLag(t, c.c.Server(0).Router().Shard(id), 5*time.Millisecond)
	before := parkedReads(t, c, 0)

	stop := make(chan struct{})
	moved := make(chan int, 1) // leader changes seen
	go func() {
		n, last := 0, c.c.Leader(id)
		defer func() { moved <- n }()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			l := c.c.Leader(id)
			if l >= 0 && l != last {
				n++
			}
			if l >= 0 {
				last = l
				c.c.Server(l).NodeHost().RequestLeaderTransfer(id, uint64((l+1+k%2)%numServers+1))
			}
		}
	}()

	rc := dialRaw(t, c.Addrs()[0], client.Options{})
	const rounds = 1000
	var (
		mu     sync.Mutex
		wrong  []string
		closed int
		good   = map[int]int{} // round -> replies that arrived without error
		done   = make(chan struct{})
		left   = 3 * rounds
	)
	record := func(i int, bad string, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case bad != "":
			wrong = append(wrong, bad)
		case err != nil:
			closed++
		default:
			good[i]++
		}
		if left--; left == 0 {
			close(done)
		}
	}
	for i := 1; i <= rounds; i++ {
		want := strconv.Itoa(i)
		rc.SetDataAsync(key, []byte(want), -1, func(_ wire.Stat, err error) { record(i, "", err) })
		rc.GetDataAsync(key, false, func(data []byte, _ wire.Stat, err error) {
			bad := ""
			if err == nil && string(data) != want {
				bad = fmt.Sprintf("getData of round %d returned %q", i, data)
			}
			record(i, bad, err)
		})
		rc.ExistsAsync(key, false, func(st wire.Stat, err error) {
			bad := ""
			if err == nil && st.Version != int32(i) {
				bad = fmt.Sprintf("exists of round %d: version %d", i, st.Version)
			}
			record(i, bad, err)
		})
		if i%20 == 0 {
			time.Sleep(10 * time.Millisecond) // spread the rounds over several leader changes
		}
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("pipelined requests did not all complete or fail")
	}
	close(stop)
	transfers := <-moved
	mu.Lock()
	defer mu.Unlock()
	if len(wrong) > 0 {
		t.Fatalf("%d replies out of order, first: %s", len(wrong), wrong[0])
	}
	complete := 0
	for _, n := range good {
		if n == 3 {
			complete++
		}
	}
	parked := parkedReads(t, c, 0) - before
	t.Logf("%d leader changes seen; %d of %d rounds answered in full, %d replies failed (connection closed); %d reads parked",
		transfers, complete, rounds, closed, parked)
	if closed == 0 && complete != rounds {
		t.Fatalf("%d rounds answered in full, no reply failed", complete)
	}
	if transfers == 0 || parked == 0 {
		t.Fatalf("%d leader changes, %d parked reads: the test exercised nothing", transfers, parked)
	}
}

package clustertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/testcluster"
)

// admin calls a server's admin endpoint and returns the body; a status other than 200 fails
// the test.
func admin(t *testing.T, method, addr, pathQuery string) string {
	t.Helper()
	code, body := adminStatus(t, method, addr, pathQuery)
	if code != http.StatusOK {
		t.Fatalf("%s %s: %d\n%s", method, pathQuery, code, body)
	}
	return body
}

// everyShardSays checks that a membership change answered one line per shard (the meta shard
// and every data shard) and that each has the result.
func everyShardSays(t *testing.T, body string, shards int, result string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(body), "\n")
	if len(lines) != shards+1 {
		t.Fatalf("want %d shard lines, got:\n%s", shards+1, body)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, fmt.Sprintf("shard=%d result=%s", i+1, result)) {
			t.Fatalf("shard %d: want result=%s, got:\n%s", i+1, result, body)
		}
	}
}

// membership reads every shard's membership through server s.
func membership(t *testing.T, s *cluster.Node, shards int) map[uint64]*memberSets {
	t.Helper()
	out := map[uint64]*memberSets{}
	for id := uint64(1); id <= uint64(shards)+1; id++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		m, err := s.NodeHost().SyncGetShardMembership(ctx, id)
		cancel()
		if err != nil {
			t.Fatalf("membership of shard %d: %v", id, err)
		}
		ms := &memberSets{voters: map[uint64]bool{}, nonVoting: map[uint64]bool{}, removed: map[uint64]bool{}}
		for r := range m.Nodes {
			ms.voters[r] = true
		}
		for r := range m.NonVotings {
			ms.nonVoting[r] = true
		}
		for r := range m.Removed {
			ms.removed[r] = true
		}
		out[id] = ms
	}
	return out
}

type memberSets struct{ voters, nonVoting, removed map[uint64]bool }

func (m *memberSets) String() string {
	return fmt.Sprintf("voters=%v nonvoting=%v removed=%v", m.voters, m.nonVoting, m.removed)
}

// writeNodes creates /<prefix>0../<prefix>(n-1), top-level znodes hashed over the data shards,
// and records their data in want.
func writeNodes(t *testing.T, c *zk.Conn, prefix string, n int, want map[string]string) {
	t.Helper()
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("/%s%d", prefix, i)
		if _, err := c.Create(p, []byte("data of "+p), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
		want[p] = "data of " + p
	}
}

// checkNodes reads every znode of want through c, after a sync of its shard.
func checkNodes(t *testing.T, c *zk.Conn, want map[string]string) {
	t.Helper()
	for p, data := range want {
		if _, err := c.Sync(p); err != nil {
			t.Fatalf("sync %s: %v", p, err)
		}
		got, _, err := c.Get(p)
		if err != nil || string(got) != data {
			t.Fatalf("get %s = %q, %v; want %q", p, got, err, data)
		}
	}
}

// moveLeader makes server to (an index) the leader of shardID.
func moveLeader(t *testing.T, cl *testcluster.Cluster, shardID uint64, to int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for cl.Leader(shardID) != to {
		if time.Now().After(deadline) {
			t.Fatalf("shard %d: leadership did not move to server %d", shardID, to+1)
		}
		if from := cl.Leader(shardID); from >= 0 {
			cl.Server(from).NodeHost().RequestLeaderTransfer(shardID, uint64(to+1))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAddAndRemoveServerOnline: a fourth server added as a voter online (POST /members/add on a
// member, the new server started with corral.join=true) becomes a voter of every shard, serves
// every znode written before and after it joined, and is handed a shard leadership by the
// balancer; adding it again changes nothing. Removing an
// original server that leads shards (POST /members/remove on the new server) leaves every shard
// with a leader among the others, the removed server stops serving clients and reports Removed,
// writes go on during and after the removal, and every acknowledged write is there.
func TestAddAndRemoveServerOnline(t *testing.T) {
	const shards = 3
	// Snapshots every 10 entries: the log the new server needs is compacted away, so it
	// catches up from a snapshot of each shard.
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: shards, Admin: true,
		Extra: []string{"corral.snapshotEntries=10"}})
	// Leaders 2-1-1 over the servers (the balancer then moves nothing among them): a fresh
	// ensemble may start with one server leading all four groups, and the balancer's one
	// transfer per 12 s would reach the new server only after serving servers 2 and 3.
	for id, to := range []int{0, 1, 2, 0} {
		moveLeader(t, cl, uint64(id+1), to)
	}
	c0, _ := connect(t, cl.Addrs()[:1])
	want := map[string]string{}
	writeNodes(t, c0, "before", 60, want)

	j := cl.NewServer(false)
	body := admin(t, "POST", cl.AdminAddr(1), fmt.Sprintf("/members/add?id=%d&raft=%s", j+1, cl.RaftAddr(j)))
	everyShardSays(t, body, shards, "added")
	cl.Restart(j) // returns once it has caught up with every shard
	everyShardSays(t, admin(t, "POST", cl.AdminAddr(0), fmt.Sprintf("/members/add?id=%d&raft=%s", j+1, cl.RaftAddr(j))), shards, "unchanged")
	writeNodes(t, c0, "after", 8, want)
	cj, _ := connect(t, cl.Addrs()[j:j+1])
	checkNodes(t, cj, want)
	for id, m := range membership(t, cl.Server(0), shards) {
		if len(m.voters) != 4 || !m.voters[uint64(j+1)] {
			t.Fatalf("shard %d after the add: %v", id, m)
		}
	}

	// The balancer hands the new server a leadership, although no original server's zoo.cfg
	// names it (server 1 leads two groups, the new one none).
	deadline := time.Now().Add(25 * time.Second)
	for leadsOne := false; !leadsOne; {
		for id := uint64(1); id <= shards+1; id++ {
			leadsOne = leadsOne || cl.Leader(id) == j
		}
		if !leadsOne && time.Now().After(deadline) {
			t.Fatal("the server added online was never handed a shard leadership")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The victim: the original server leading the most shards.
	victim, most := -1, 0
	for i := 0; i < 3; i++ {
		n := 0
		for id := uint64(1); id <= shards+1; id++ {
			if cl.Leader(id) == i {
				n++
			}
		}
		if n > most {
			victim, most = i, n
		}
	}
	if victim < 0 {
		t.Fatal("no original server leads a shard")
	}
	t.Logf("removing server %d, which leads %d shards", victim+1, most)

	// A writer on the new server keeps writing through the removal.
	if _, err := cj.Create("/w", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			p, err := cj.Create("/w/n-", []byte("w"), zk.FlagSequence, zk.WorldACL(zk.PermAll))
			if err == nil {
				mu.Lock()
				acked = append(acked, p)
				mu.Unlock()
			}
		}
	}()
	ackedNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}

	body = admin(t, "POST", cl.AdminAddr(j), fmt.Sprintf("/members/remove?id=%d", victim+1))
	everyShardSays(t, body, shards, "removed")
	// A replica that never applies its own removal (it committed before the replica had the
	// entry) counts as removed after 10 s without a leader (cluster removalGrace), checked once a
	// second: allow that path too.
	select {
	case <-cl.Server(victim).Removed():
	case <-time.After(25 * time.Second):
		t.Fatal("the removed server did not notice its removal from every shard")
	}
	if conn, err := net.DialTimeout("tcp", cl.Addrs()[victim], time.Second); err == nil {
		conn.Close()
		t.Fatal("the removed server still accepts clients")
	}
	afterRemoval := ackedNow()
	deadline = time.Now().Add(10 * time.Second)
	for ackedNow() < afterRemoval+50 {
		if time.Now().After(deadline) {
			t.Fatalf("writes stalled after the removal: %d acknowledged before, %d now", afterRemoval, ackedNow())
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	<-writerDone
	cl.Stop(victim)
	// Restarted, it replays its removal and refuses to start (rather than wait for a leader).
	if err := cl.TryStart(victim); err == nil || !strings.Contains(err.Error(), "was removed from shard") {
		t.Fatalf("restarting the removed server: %v", err)
	}

	for id, m := range membership(t, cl.Server(j), shards) {
		if m.voters[uint64(victim+1)] || !m.removed[uint64(victim+1)] || len(m.voters) != 3 {
			t.Fatalf("shard %d after the removal: %v", id, m)
		}
		if l := cl.Leader(id); l < 0 || l == victim {
			t.Fatalf("shard %d has no leader among the remaining servers (%d)", id, l)
		}
	}
	writeNodes(t, cj, "last", 4, want)
	for _, p := range acked {
		want[p] = "w"
	}
	other := (victim + 1) % 3
	co, _ := connect(t, cl.Addrs()[other:other+1])
	checkNodes(t, co, want)
	kids, _, err := co.Children("/w")
	if err != nil || len(kids) < len(acked) {
		t.Fatalf("/w has %d children (%v), %d writes were acknowledged", len(kids), err, len(acked))
	}
	t.Logf("%d writes acknowledged while the server was removed and after", len(acked))
	// A removed id never comes back.
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://%s/members/add?id=%d&raft=%s", cl.AdminAddr(j), victim+1, cl.RaftAddr(victim)), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK || !strings.Contains(string(msg), "can never rejoin") {
		t.Fatalf("re-adding a removed id: %s\n%s", resp.Status, msg)
	}
}

// srvrMode returns the Mode line of the srvr four-letter word.
func srvrMode(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "srvr")
	b, _ := io.ReadAll(c)
	for _, l := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return m
		}
	}
	return ""
}

// TestObservers: an observer listed in zoo.cfg at the ensemble's first start (server.4=...
// :observer) and one added online (POST /members/add?observer=1, started before it was added)
// are non-voting replicas of every shard. An observer serves reads locally, forwards its
// clients' writes, reports Mode: observer, never leads, restarts as an observer, and does not
// count towards the quorum:
// with both observers and one participant stopped, the two remaining participants still write.
func TestObservers(t *testing.T) {
	const shards = 2
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Observers: 1, Shards: shards, Admin: true})
	const obs = 3
	co, _ := connect(t, cl.Addrs()[obs:obs+1])
	if _, err := co.Create("/from-observer", []byte("o"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("write through the observer: %v", err)
	}
	c1, _ := connect(t, cl.Addrs()[1:2])
	want := map[string]string{"/from-observer": "o"}
	writeNodes(t, c1, "p", 6, want)
	checkNodes(t, co, want)
	if m := srvrMode(t, cl.Addrs()[obs]); m != "observer" {
		t.Fatalf("srvr on the observer: Mode %q", m)
	}

	// A second observer, started first and added afterwards.
	j := cl.NewServer(true)
	started := make(chan struct{})
	go func() {
		defer close(started)
		cl.Restart(j)
	}()
	time.Sleep(300 * time.Millisecond)
	body := admin(t, "POST", cl.AdminAddr(obs), fmt.Sprintf("/members/add?id=%d&raft=%s&observer=1", j+1, cl.RaftAddr(j)))
	everyShardSays(t, body, shards, "added")
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the observer added online did not start")
	}
	if cl.Server(j) == nil {
		t.Fatal("the observer added online failed to start")
	}
	cj, _ := connect(t, cl.Addrs()[j:j+1])
	checkNodes(t, cj, want)

	for id, m := range membership(t, cl.Server(0), shards) {
		if len(m.voters) != 3 || m.voters[obs+1] || m.voters[uint64(j+1)] || !m.nonVoting[obs+1] || !m.nonVoting[uint64(j+1)] {
			t.Fatalf("shard %d: %v; want voters 1-3 and observers %d, %d non-voting", id, m, obs+1, j+1)
		}
		if l := cl.Leader(id); l == obs || l == j {
			t.Fatalf("shard %d is led by observer %d", id, l+1)
		}
	}
	list := admin(t, "GET", cl.AdminAddr(j), "/members")
	if n := strings.Count(list, fmt.Sprintf("nonvoting=%d@%s,%d@%s", obs+1, cl.RaftAddr(obs), j+1, cl.RaftAddr(j))); n != shards+1 {
		t.Fatalf("GET /members on the new observer:\n%s", list)
	}

	// An observer restarts from its log as a non-voting replica and catches up.
	cl.Stop(obs)
	writeNodes(t, c1, "while-down", 3, want)
	cl.Restart(obs)
	co2, _ := connect(t, cl.Addrs()[obs:obs+1])
	checkNodes(t, co2, want)
	if m := membership(t, cl.Server(obs), shards); !m[cluster.MetaShardID].nonVoting[obs+1] || m[cluster.MetaShardID].voters[obs+1] {
		t.Fatalf("observer after its restart: %v", m[cluster.MetaShardID])
	}

	// Stop both observers and one participant: two of three voters remain, a quorum.
	cl.Stop(obs)
	cl.Stop(j)
	cl.Stop(0)
	c2, _ := connect(t, cl.Addrs()[2:3])
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i := 0; ; i++ {
		_, err := c2.Create(fmt.Sprintf("/quorum%d", i), nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil && i >= 3 {
			break
		}
		if err != nil && !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("write with observers and one participant down: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatal("no quorum without the observers")
		}
	}
}

// TestObserverConfig: zoo.cfg's observer syntax (server.N=host:peer:election:observer, with a
// client port after ';', :participant, peerType) and corral.join parse, observers are not
// initial voters, and a bad role is refused.
func TestObserverConfig(t *testing.T) {
	cfg, err := cluster.ParseConfig(strings.NewReader("dataDir=/d\npeerType=observer\ncorral.join=true\n" +
		"server.1=h1:2888:3888\nserver.2=h2:2888:3888:participant\nserver.3=h3:2888:3888:observer;2181\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MyID = 3
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if !cfg.Observer() || !cfg.Join || !cfg.Peers[2].Observer || cfg.Peers[1].Observer || cfg.Peers[2].ClientAddr != "0.0.0.0:2181" {
		t.Fatalf("parsed %+v", cfg)
	}
	if p := cfg.Participants(); len(p) != 2 || p[0].ID != 1 || p[1].ID != 2 {
		t.Fatalf("participants %+v", p)
	}
	if _, err := cluster.ParseConfig(strings.NewReader("server.1=h1:2888:3888:voter\n")); err == nil {
		t.Fatal("role voter accepted")
	}
	only, _ := cluster.ParseConfig(strings.NewReader("dataDir=/d\nserver.1=h1:2888:3888:observer\n"))
	only.MyID = 1
	if err := only.Validate(); err == nil {
		t.Fatal("an ensemble of observers only was accepted")
	}
}

package faulttest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/linearize"
	"github.com/corral/corral/router"
)

// The shape of TestShardedFaultSIGKILL.
const (
	shServers          = 3
	shShards           = 4 // corral.shards: data shards 2..5; the meta (session) shard is 1
	shSubtreesPerShard = 2 // top-level subtrees per data shard: 8 in all
	shKeysPerSubtree   = 2 // register keys under each subtree: 16 in all
	shWarmup           = 2 * time.Second
	shAfterKill        = 6 * time.Second // load after the kill (at least shAfterResume after resumption)
	shAfterResume      = 2 * time.Second
	shMultiPause       = 20 * time.Millisecond // between one multi client's multis
	shOpPause          = time.Millisecond      // between one register client's operations
	shBalanceBound     = 30 * time.Second      // wait for the leader balancer to settle
	shResumeWait       = 15 * time.Second      // give up waiting for resumption (the assertion fails later)
	// The assertions. The target for shards the killed server did not lead is no gap
	// above 100 ms; the test measures and logs the actual gaps but asserts 1 s, because on the
	// loaded 2-core machine the suite runs on, three server processes, the test's fifteen
	// sessions and the Go scheduler can on their own pause a shard's completions for a few
	// hundred milliseconds (a missed heartbeat on a starved process, a GC pause). A shard whose
	// writes stop for the failover of another shard shows a gap of the order of that failover.
	shUnaffectedGapBound = time.Second
	shResumeBound        = 5 * time.Second
	// The gaps are measured over [kill - shGapLead, end of the load].
	shGapLead = time.Second
)

// shAfterKillEnv names an environment variable with a Go duration that replaces shAfterKill,
// to watch the ensemble for longer after the kill (e.g. 20s: past the leader balancer's first
// rounds after it, cluster/balance.go).
const shAfterKillEnv = "CORRAL_SHARDED_FAULT_AFTER_KILL"

var shDataShards = func() []uint64 {
	ids := make([]uint64, shShards)
	for i := range ids {
		ids[i] = cluster.DataShardID(i)
	}
	return ids
}()

// shSubtrees returns shSubtreesPerShard top-level names per data shard ("sf" plus a number),
// in shard order, chosen with router.TopLevelShard so that every data shard holds some.
func shSubtrees(t *testing.T) map[uint64][]string {
	t.Helper()
	out := map[uint64][]string{}
	for k, n := 0, 0; n < shShards*shSubtreesPerShard; k++ {
		if k > 10000 {
			t.Fatalf("no %d names per shard found: %v", shSubtreesPerShard, out)
		}
		name := "sf" + strconv.Itoa(k)
		s := router.TopLevelShard(name, shDataShards)
		if len(out[s]) < shSubtreesPerShard {
			out[s] = append(out[s], name)
			n++
		}
	}
	for _, s := range shDataShards {
		if len(out[s]) != shSubtreesPerShard {
			t.Fatalf("shard %d holds subtrees %v, want %d", s, out[s], shSubtreesPerShard)
		}
		for _, name := range out[s] {
			if got := router.TopLevelShard(name, shDataShards); got != s {
				t.Fatalf("/%s is on shard %d, want %d", name, got, s)
			}
		}
	}
	return out
}

// orderedHosts is a go-zookeeper HostProvider that tries the servers in a fixed order, starting
// with the first (zk.Connect shuffles the list it passes to Init): a session starts on its home
// server and moves to the next one only when that fails.
type orderedHosts struct {
	mu         sync.Mutex
	order      []string
	curr, last int
}

func newOrderedHosts(order []string) *orderedHosts {
	return &orderedHosts{order: order, curr: -1, last: -1}
}

func (h *orderedHosts) Init(servers []string) error {
	if len(servers) != len(h.order) {
		return fmt.Errorf("orderedHosts: %d servers, want %d", len(servers), len(h.order))
	}
	return nil
}

func (h *orderedHosts) Len() int { return len(h.order) }

func (h *orderedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.order)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.order[h.curr], retryStart
}

func (h *orderedHosts) Connected() {
	h.mu.Lock()
	h.last = h.curr
	h.mu.Unlock()
}

// shDial opens a session on server home of e, falling back on the other servers in index order.
func shDial(t *testing.T, e *corralproc.Ensemble, home int) *zk.Conn {
	t.Helper()
	order := []string{e.Addr(home)}
	for i := 0; i < e.Size(); i++ {
		if i != home {
			order = append(order, e.Addr(i))
		}
	}
	c, _, err := zk.Connect(order, sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}),
		zk.WithHostProvider(newOrderedHosts(order)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for c.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			c.Close()
			t.Fatalf("no session with server %d (state %v)", home+1, c.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c
}

// shLeaders asks every running server's admin page /shards who leads each Raft group and
// returns group → leader myid when all of them agree and every group has a running leader.
func shLeaders(ctx context.Context, e *corralproc.Ensemble) (map[uint64]uint64, error) {
	var agreed map[uint64]uint64
	for i := 0; i < e.Size(); i++ {
		if !e.Running(i) {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ls, err := e.ShardLeaders(qctx, i)
		cancel()
		if err != nil {
			return nil, err
		}
		m := map[uint64]uint64{}
		for _, l := range ls {
			if !l.HasLeader || l.Leader == 0 || l.Leader > uint64(e.Size()) || !e.Running(int(l.Leader)-1) {
				return nil, fmt.Errorf("server %d sees group %d without a running leader (%+v)", i+1, l.Shard, l)
			}
			m[l.Shard] = l.Leader
		}
		if len(m) != shShards+1 {
			return nil, fmt.Errorf("server %d lists %d Raft groups, want %d: %v", i+1, len(m), shShards+1, m)
		}
		if agreed == nil {
			agreed = m
		} else if !maps.Equal(agreed, m) {
			return nil, fmt.Errorf("servers disagree on the leaders: %v, server %d: %v", agreed, i+1, m)
		}
	}
	if agreed == nil {
		return nil, errors.New("no server running")
	}
	return agreed, nil
}

// shDataLed returns, per server index, the data shards it leads (sorted).
func shDataLed(leaders map[uint64]uint64, servers int) [][]uint64 {
	led := make([][]uint64, servers)
	for _, s := range shDataShards {
		i := int(leaders[s]) - 1
		led[i] = append(led[i], s)
	}
	return led
}

// shBalanced reports whether no server leads two Raft groups more than another: then the
// leader balancer (cluster/balance.go) moves nothing, so leadership stays put during the load.
func shBalanced(leaders map[uint64]uint64, servers int) bool {
	count := make([]int, servers)
	for _, l := range leaders {
		count[l-1]++
	}
	return slices.Max(count)-slices.Min(count) < 2
}

func shDescribe(leaders map[uint64]uint64, servers int) string {
	var parts []string
	for i := 0; i < servers; i++ {
		var groups []string
		if leaders[cluster.MetaShardID] == uint64(i+1) {
			groups = append(groups, "meta 1")
		}
		for _, s := range shDataShards {
			if leaders[s] == uint64(i+1) {
				groups = append(groups, "data "+strconv.FormatUint(s, 10))
			}
		}
		parts = append(parts, fmt.Sprintf("server %d: [%s]", i+1, strings.Join(groups, ", ")))
	}
	return strings.Join(parts, "; ")
}

// shPickVictim picks the server that leads some but not all data shards, the most of them
// (ties: the lowest index); if no server leads a strict non-empty subset, the server leading
// the most data shards.
func shPickVictim(leaders map[uint64]uint64, servers int) (victim int, strictSubset bool) {
	led := shDataLed(leaders, servers)
	victim = -1
	for i, l := range led {
		if len(l) > 0 && len(l) < shShards && (victim < 0 || len(l) > len(led[victim])) {
			victim = i
		}
	}
	if victim >= 0 {
		return victim, true
	}
	victim = 0
	for i, l := range led {
		if len(l) > len(led[victim]) {
			victim = i
		}
	}
	return victim, false
}

// shPhase is what the multi clients may do; set by the test goroutine.
type shPhase struct {
	victim   int             // -1 before the kill is prepared
	affected map[uint64]bool // data shards led by the victim
	anyPair  bool            // multis may span affected shards again (they resumed)
}

// multiRecord is one cross-shard multi (creates of one fresh node in each of two or three
// subtrees on different shards).
type multiRecord struct {
	client, home int
	paths        []string
	shards       []uint64
	call, ret    int64
	result       linearize.Result // OK, Failed (never sent or refused with an error), Unknown
	err          error
}

// shClient is one recorded session: a register client works on the keys and subtrees of one data
// shard; a multi client (shard 0) issues cross-shard multis.
type shClient struct {
	*client
	home     int
	shard    uint64
	subtrees []string
	keys     []string
	created  int
	// lastOKWriteCall is the call time of the latest acknowledged write (for the live check
	// that the affected shards resumed).
	lastOKWriteCall atomic.Int64
	// inMulti is set by a multi client from before it looks at the phase until its multi
	// returned, and usingPhase is the phase it looked at: before the kill the test waits until
	// no multi chosen under an earlier phase is outstanding.
	inMulti    atomic.Bool
	usingPhase atomic.Pointer[shPhase]
	multis     []multiRecord
}

// registerOp runs the next operation of a register client: setData (mostly unconditional,
// sometimes with the last seen version or a guess), getData (synced or plain), a create of a
// fresh node, and now and then a create or delete of a register key.
func (c *shClient) registerOp() error {
	path := c.keys[c.rng.IntN(len(c.keys))]
	c.seq++
	data := fmt.Sprintf("c%d-%d", c.id, c.seq)
	var in linearize.Input
	switch r := c.rng.IntN(100); {
	case r < 47:
		v := linearize.AnyVersion
		if c.rng.IntN(3) == 0 {
			v = c.expected(path)
		}
		in = linearize.Input{Kind: linearize.Set, Path: path, Data: data, Version: v}
	case r < 62:
		in = linearize.Input{Kind: linearize.Get, Path: path, Synced: true}
	case r < 77:
		in = linearize.Input{Kind: linearize.Get, Path: path}
	case r < 87:
		sub := c.subtrees[c.rng.IntN(len(c.subtrees))]
		c.created++
		in = linearize.Input{Kind: linearize.Create, Path: fmt.Sprintf("/%s/n-%d-%d", sub, c.id, c.created), Data: data}
	case r < 95:
		in = linearize.Input{Kind: linearize.Create, Path: path, Data: data}
	default:
		in = linearize.Input{Kind: linearize.Delete, Path: path, Version: c.expected(path)}
	}
	call := c.rec.Now()
	out, err := c.do(in)
	if err != nil {
		return err
	}
	if in.Kind != linearize.Get && out.Result == linearize.OK {
		c.lastOKWriteCall.Store(call)
	}
	return nil
}

// multiOp runs one cross-shard multi over shards chosen by the phase.
func (c *shClient) multiOp(ph *shPhase, subtrees map[uint64][]string) {
	var pool []uint64
	for _, s := range shDataShards {
		if ph.victim < 0 || ph.anyPair || !ph.affected[s] {
			pool = append(pool, s)
		}
	}
	if len(pool) < 2 {
		return
	}
	n := 2
	if len(pool) > 2 && c.rng.IntN(3) == 0 {
		n = 3
	}
	c.rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	c.seq++
	m := multiRecord{client: c.id, home: c.home, shards: slices.Clone(pool[:n])}
	var ops []any
	for _, s := range m.shards {
		sub := subtrees[s][c.rng.IntN(len(subtrees[s]))]
		p := fmt.Sprintf("/%s/m-%d-%d", sub, c.id, c.seq)
		m.paths = append(m.paths, p)
		ops = append(ops, &zk.CreateRequest{Path: p, Data: []byte(p), Acl: zk.WorldACL(zk.PermAll)})
	}
	m.call = c.rec.Now()
	_, err := c.conn.Multi(ops...)
	m.ret = c.rec.Now()
	var netErr net.Error
	switch {
	case err == nil:
		m.result = linearize.OK
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrSessionExpired),
		errors.As(err, &netErr), err.Error() == errSyncTimeout:
		m.result = linearize.Unknown
	default:
		// ErrNoServer (never sent) or an error answer: the multi must not have been applied.
		m.result, m.err = linearize.Failed, err
	}
	if m.result == linearize.OK {
		c.lastOKWriteCall.Store(m.call)
	}
	c.multis = append(c.multis, m)
}

// completion is an acknowledged write's return time on one shard.
type completion struct {
	shard uint64
	at    int64
}

// maxGap is the largest interval without a time of ts (sorted) in [from, to], edges included.
func maxGap(ts []int64, from, to int64) (gap, end int64) {
	prev := from
	for _, t := range ts {
		if t < from {
			continue
		}
		if t > to {
			break
		}
		if t-prev > gap {
			gap, end = t-prev, t
		}
		prev = t
	}
	if to-prev > gap {
		gap, end = to-prev, to
	}
	return gap, end
}

func ms(ns int64) time.Duration { return time.Duration(ns).Round(100 * time.Microsecond) }

// TestShardedFaultSIGKILL: a 3-process ensemble with four data shards under a mixed recorded
// load over eight top-level subtrees (two per data shard); a server that leads some but not all
// data shards is SIGKILLed. Writes to the shards it did not lead must go on (no gap of 1 s or
// more between completed writes, measured on sessions of the surviving servers), the shards it
// led must resume within 5 s, every acknowledged write must be there afterwards, the history
// of the register operations must be linearizable (porcupine, per key), and each cross-shard
// multi must be applied on all its shards or on none.
//
// The load: on every server one session per data shard doing register operations on that
// shard's keys (setData with unique values, sync+getData, getData, creates of fresh nodes, now
// and then a create or delete of a key), and one session doing cross-shard multis (a create in
// two or three subtrees on different shards). Before the kill the multis stop spanning the
// victim's shards, the victim's multi session stops, and the kill waits for the multis begun
// earlier; once the victim's shards took writes again, the multis span every shard again. (A
// transaction whose coordinator dies holds its prepared participants until its deadline and a
// recovery round, docs/design.md §7: a multi of the victim's in flight at the kill would stop
// shards that the victim did not lead for that long.) The load runs for 6 s after the kill, less than the leader balancer
// needs to act after it (4 rounds of 3 s, cluster/balance.go); CORRAL_SHARDED_FAULT_AFTER_KILL
// lengthens it.
func TestShardedFaultSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault test: ~30-50 s (skipped with -short)")
	}
	afterKill := shAfterKill
	if v := os.Getenv(shAfterKillEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration", shAfterKillEnv, v)
		}
		afterKill = d
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute+afterKill)
	defer cancel()
	subtrees := shSubtrees(t)
	var names []string
	for _, s := range shDataShards {
		names = append(names, subtrees[s]...)
	}
	t.Logf("subtrees per data shard: %v", subtrees)

	e, err := corralproc.Start(ctx, corralproc.Options{Servers: shServers, Shards: shShards,
		Config: map[string]string{"corral.placement": "hash"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rec := linearize.NewRecorder()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d; ensemble up in %v (%s)", seed, time.Since(begin).Round(time.Millisecond), e.Dir())

	// The subtrees (each a cross-shard create: the node on its shard, the stub in "/") and the
	// register keys, recorded so that the model knows the keys' first values.
	nextID := 0
	newClient := func(home int) *client {
		c := &client{id: nextID, server: home, conn: shDial(t, e, home), rec: rec,
			rng: rand.New(rand.NewPCG(seed, uint64(nextID))), version: map[string]int32{}, counts: map[string]int{}}
		nextID++
		return c
	}
	setup := newClient(0)
	defer setup.conn.Close()
	keysOf := map[uint64][]string{}
	for _, s := range shDataShards {
		for _, name := range subtrees[s] {
			if _, err := setup.conn.Create("/"+name, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create /%s: %v", name, err)
			}
			for k := 0; k < shKeysPerSubtree; k++ {
				p := fmt.Sprintf("/%s/k%d", name, k)
				out, err := setup.do(linearize.Input{Kind: linearize.Create, Path: p, Data: "init" + p})
				if err != nil || out.Result != linearize.OK {
					t.Fatalf("create %s: %v %v", p, out.Result, err)
				}
				keysOf[s] = append(keysOf[s], p)
			}
		}
	}

	// Wait for the leader balancer to settle: a leadership transfer during the load would stop
	// a shard that the kill does not touch.
	var leaders map[uint64]uint64
	balanceDeadline := time.Now().Add(shBalanceBound)
	for {
		leaders, err = shLeaders(ctx, e)
		if err == nil && shBalanced(leaders, shServers) {
			break
		}
		if time.Now().After(balanceDeadline) {
			t.Logf("leadership not balanced after %v (%v; %v): going on", shBalanceBound, shDescribe(leaders, shServers), err)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("leadership before the load (%v after start): %s", time.Since(begin).Round(time.Millisecond), shDescribe(leaders, shServers))

	// Every server gets one register client per data shard and one multi client. Which of them
	// are the victim's is decided just before the kill; the measurements use only the others.
	var clients []*shClient
	for home := 0; home < shServers; home++ {
		for _, s := range shDataShards {
			c := &shClient{client: newClient(home), home: home, shard: s, subtrees: subtrees[s], keys: keysOf[s]}
			clients = append(clients, c)
		}
		clients = append(clients, &shClient{client: newClient(home), home: home})
	}
	defer func() {
		for _, c := range clients {
			c.conn.Close()
		}
	}()

	var phase atomic.Pointer[shPhase]
	phase.Store(&shPhase{victim: -1})
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopLoad(); wg.Wait() }()
	errs := make(chan error, len(clients))
	loadStart := rec.Now()
	for _, c := range clients {
		c.lastDefinite = loadStart
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < maxOpsPerClient && loadCtx.Err() == nil; n++ {
				if c.shard == 0 {
					c.inMulti.Store(true)
					ph := phase.Load()
					c.usingPhase.Store(ph)
					if ph.victim != c.home {
						c.multiOp(ph, subtrees)
					}
					c.usingPhase.Store(nil)
					c.inMulti.Store(false)
					time.Sleep(shMultiPause)
					continue
				}
				if err := c.registerOp(); err != nil {
					errs <- err
					return
				}
				time.Sleep(shOpPause)
			}
		}()
	}

	// The fault. The victim is chosen from the leadership just before the kill; the multi
	// clients stop spanning its shards, and its own multi client stops, before it, so that no
	// cross-shard transaction that a surviving shard takes part in waits on it: a transaction
	// whose coordinator dies holds its prepared participants until its deadline and the
	// recovery round after it (docs/design.md §7), which would stop the unaffected shards too.
	time.Sleep(shWarmup)
	var (
		victim   int
		strict   bool
		affected map[uint64]bool
	)
	for attempt := 0; ; attempt++ {
		leaders, err = shLeaders(ctx, e)
		if err != nil {
			t.Fatalf("leadership before the kill: %v", err)
		}
		victim, strict = shPickVictim(leaders, shServers)
		affected = map[uint64]bool{}
		for _, s := range shDataLed(leaders, shServers)[victim] {
			affected[s] = true
		}
		killPhase := &shPhase{victim: victim, affected: affected}
		phase.Store(killPhase)
		idleDeadline := time.Now().Add(10 * time.Second)
		for _, c := range clients {
			for c.shard == 0 && c.inMulti.Load() && c.usingPhase.Load() != killPhase {
				if time.Now().After(idleDeadline) {
					t.Fatalf("the multi of client %d (server %d) begun before the kill was prepared did not end in 10 s", c.id, c.home+1)
				}
				time.Sleep(time.Millisecond)
			}
		}
		time.Sleep(100 * time.Millisecond)
		again, err := shLeaders(ctx, e)
		if err == nil && maps.Equal(again, leaders) {
			break
		}
		t.Logf("leadership changed just before the kill: %s (%v)", shDescribe(again, shServers), err)
		if attempt == 5 {
			t.Fatalf("leadership does not settle")
		}
	}
	var unaffected, affectedList []uint64
	for _, s := range shDataShards {
		if affected[s] {
			affectedList = append(affectedList, s)
		} else {
			unaffected = append(unaffected, s)
		}
	}
	t.Logf("leadership at the kill: %s", shDescribe(leaders, shServers))
	if !strict {
		t.Logf("no server leads a strict non-empty subset of the data shards: killing the one leading the most")
	}
	t.Logf("SIGKILL server %d: it leads data shards %v (meta shard: %v); unaffected data shards %v",
		victim+1, affectedList, leaders[cluster.MetaShardID] == uint64(victim+1), unaffected)
	killAt := rec.Now()
	if err := e.Kill(victim); err != nil {
		t.Fatal(err)
	}
	t.Logf("kill at %v took %v", ms(killAt-loadStart), ms(rec.Now()-killAt))

	// Wait until every affected shard has acknowledged a write called after the kill, on a
	// surviving server's session; then the multis may span every shard again.
	resumedAll := int64(-1)
	resumeDeadline := time.Now().Add(shResumeWait)
	for resumedAll < 0 && time.Now().Before(resumeDeadline) && len(errs) == 0 {
		pending := false
		for _, s := range affectedList {
			done := false
			for _, c := range clients {
				if c.shard == s && c.home != victim && c.lastOKWriteCall.Load() >= killAt {
					done = true
				}
			}
			pending = pending || !done
		}
		if !pending {
			resumedAll = rec.Now()
			phase.Store(&shPhase{victim: victim, affected: affected, anyPair: true})
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if resumedAll >= 0 {
		t.Logf("all affected shards took writes again by %v after the kill (live check)", ms(resumedAll-killAt))
	} else {
		t.Logf("affected shards did not all resume within %v", shResumeWait)
	}
	for len(errs) == 0 && (rec.Now()-killAt < int64(afterKill) || resumedAll >= 0 && rec.Now()-resumedAll < int64(shAfterResume)) {
		time.Sleep(20 * time.Millisecond)
	}
	loadEnd := rec.Now()
	stopLoad()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	survivors := []int{}
	for i := 0; i < shServers; i++ {
		if i != victim {
			survivors = append(survivors, i)
		}
	}
	for _, c := range clients {
		if c.shard == 0 {
			count := map[linearize.Result]int{}
			for _, m := range c.multis {
				count[m.result]++
			}
			t.Logf("client %d (server %d, multis): %v", c.id, c.home+1, count)
			continue
		}
		t.Logf("client %d (server %d, shard %d): longest wait for a definite outcome %v ending %v after the kill; %v",
			c.id, c.home+1, c.shard, ms(c.maxGap), ms(c.maxGapEnd-killAt), c.counts)
	}

	// The measurements: acknowledged writes of the surviving servers' sessions, per shard.
	h := rec.History()
	homeOf := map[int]int{}
	shardOf := map[int]uint64{}
	for _, c := range clients {
		homeOf[c.id], shardOf[c.id] = c.home, c.shard
	}
	var done []completion
	for _, op := range h {
		if home, ok := homeOf[op.Client]; ok && home != victim && op.Acknowledged() {
			done = append(done, completion{shardOf[op.Client], op.Return})
		}
	}
	var multis []multiRecord
	for _, c := range clients {
		multis = append(multis, c.multis...)
	}
	for _, m := range multis {
		if m.home != victim && m.result == linearize.OK {
			for _, s := range m.shards {
				done = append(done, completion{s, m.ret})
			}
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].at < done[j].at })
	perShard := map[uint64][]int64{}
	var all []int64
	for _, d := range done {
		perShard[d.shard] = append(perShard[d.shard], d.at)
		all = append(all, d.at)
	}
	from := killAt - int64(shGapLead)
	for _, s := range shDataShards {
		gap, end := maxGap(perShard[s], from, loadEnd)
		base, _ := maxGap(perShard[s], loadStart+int64(500*time.Millisecond), killAt)
		n := 0
		resume := int64(-1)
		for _, op := range h {
			if homeOf[op.Client] != victim && shardOf[op.Client] == s && op.Acknowledged() && op.Call >= killAt &&
				(resume < 0 || op.Return-killAt < resume) {
				resume = op.Return - killAt
			}
		}
		for _, at := range perShard[s] {
			if at >= from && at <= loadEnd {
				n++
			}
		}
		// The interval around the kill itself: from the last write acknowledged before it to the
		// first acknowledged after it.
		across := int64(-1)
		if i := sort.Search(len(perShard[s]), func(i int) bool { return perShard[s][i] >= killAt }); i > 0 && i < len(perShard[s]) {
			across = perShard[s][i] - perShard[s][i-1]
		}
		role := "unaffected"
		if affected[s] {
			role = "AFFECTED"
		}
		t.Logf("shard %d (%s): %d acknowledged writes in [kill-%v, end]; largest gap %v ending %v after the kill; "+
			"gap across the kill %v; first write called after the kill acknowledged %v after it; largest gap before the kill %v",
			s, role, n, shGapLead, ms(gap), ms(end-killAt), ms(across), ms(resume), ms(base))
		switch {
		case affected[s] && (resume < 0 || resume >= int64(shResumeBound)):
			t.Errorf("shard %d (led by the killed server) did not resume within %v: first write called after the kill acknowledged %v after it",
				s, shResumeBound, ms(resume))
		case affected[s] && gap >= int64(shResumeBound):
			t.Errorf("shard %d (led by the killed server): %v without an acknowledged write, want < %v", s, ms(gap), shResumeBound)
		case !affected[s] && gap >= int64(shUnaffectedGapBound):
			t.Errorf("shard %d (not led by the killed server): %v without an acknowledged write around the kill, want < %v (target 100 ms)",
				s, ms(gap), shUnaffectedGapBound)
		}
	}
	gap, end := maxGap(all, from, loadEnd)
	t.Logf("ensemble-wide: largest window without any acknowledged write %v, ending %v after the kill", ms(gap), ms(end-killAt))

	// Final reads on the surviving servers, on fresh sessions: sync then get every key on both,
	// and every other path the load wrote (fresh nodes) on the first.
	written := map[string]bool{}
	for _, op := range h {
		if op.Input.Kind != linearize.Get {
			written[op.Input.Path] = true
		}
	}
	var registers, fresh []string
	for _, s := range shDataShards {
		registers = append(registers, keysOf[s]...)
	}
	for p := range written {
		if !slices.Contains(registers, p) {
			fresh = append(fresh, p)
		}
	}
	sort.Strings(fresh)
	for i, srv := range survivors {
		paths := registers
		if i == 0 {
			paths = append(slices.Clone(registers), fresh...)
		}
		shFinalReads(t, rec, nextID+i, e.Addr(srv), paths)
	}

	// Cross-shard multis: all or none of each multi's nodes, read after a sync of every subtree.
	checker := shDial(t, e, survivors[0])
	defer checker.Close()
	for _, name := range names {
		if _, err := checker.Sync("/" + name); err != nil {
			t.Fatalf("sync /%s: %v", name, err)
		}
	}
	var multiOK, multiUnknown, multiFailed, multiUnknownApplied, multiAfterResume int
	for _, m := range multis {
		if m.result == linearize.OK && resumedAll >= 0 && m.call > resumedAll && slices.ContainsFunc(m.shards, func(s uint64) bool { return affected[s] }) {
			multiAfterResume++
		}
		var present []string
		for _, p := range m.paths {
			ok, _, err := checker.Exists(p)
			if err != nil {
				t.Fatalf("exists %s: %v", p, err)
			}
			if ok {
				present = append(present, p)
			}
		}
		switch {
		case len(present) != 0 && len(present) != len(m.paths):
			t.Errorf("multi of client %d over shards %v (%v, %v): only %v of %v present", m.client, m.shards, m.result, m.err, present, m.paths)
		case m.result == linearize.OK && len(present) == 0:
			t.Errorf("acknowledged multi of client %d over shards %v lost: none of %v present", m.client, m.shards, m.paths)
		case m.result == linearize.Failed && len(present) != 0:
			t.Errorf("multi of client %d over shards %v failed (%v) but was applied: %v", m.client, m.shards, m.err, m.paths)
		}
		switch m.result {
		case linearize.OK:
			multiOK++
		case linearize.Unknown:
			multiUnknown++
			if len(present) > 0 {
				multiUnknownApplied++
			}
		default:
			multiFailed++
			t.Logf("multi of client %d over shards %v failed: %v", m.client, m.shards, m.err)
		}
	}
	t.Logf("multis: %d acknowledged (%d of them over a shard of the killed server, after it resumed), %d failed, %d of unknown outcome (%d of them applied)",
		multiOK, multiAfterResume, multiFailed, multiUnknown, multiUnknownApplied)
	if multiOK == 0 {
		t.Errorf("no cross-shard multi was acknowledged")
	}

	// The history: porcupine per key, and the validators (acknowledged writes present in the
	// final reads, sessions never reading back in time).
	h = rec.History()
	t.Logf("history: %d operations (%d paths) in %v of load", len(h), len(written), ms(loadEnd-loadStart))
	ok, info := linearize.Check(h, 2*checkTimeout)
	t.Logf("porcupine: %s", info)
	if !ok {
		t.Errorf("%v", info.Err())
		reportIllegalPaths(t, h, registers)
	}
	if err := linearize.Validate(h); err != nil {
		t.Errorf("validators: %v", err)
	}
	t.Logf("total %v", time.Since(begin).Round(time.Millisecond))
}

// shFinalReads reads every path with sync+get through a fresh session on addr, retrying reads
// whose outcome is unknown, and records them as client id.
func shFinalReads(t *testing.T, rec *linearize.Recorder, id int, addr string, paths []string) {
	t.Helper()
	c := &client{id: id, conn: dial(t, addr), rec: rec, version: map[string]int32{}, counts: map[string]int{}}
	defer c.conn.Close()
	deadline := time.Now().Add(finalBound)
	for _, p := range paths {
		for {
			out, err := c.do(linearize.Input{Kind: linearize.Get, Path: p, Synced: true})
			if err != nil {
				t.Fatal(err)
			}
			if out.Result == linearize.OK || out.Result == linearize.NoNode {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("final read of %s on %s: no answer in %v", p, addr, finalBound)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// reportIllegalPaths checks each path's history alone and names those that are not
// linearizable.
func reportIllegalPaths(t *testing.T, h linearize.History, paths []string) {
	t.Helper()
	for _, path := range paths {
		var sub linearize.History
		for _, op := range h {
			if op.Input.Path == path {
				sub = append(sub, op)
			}
		}
		if ok, info := linearize.Check(sub, checkTimeout); !ok {
			t.Errorf("%s is not linearizable: %s", path, info)
		}
	}
}

package faulttest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/router"
)

// The faults the TestFaultDuring* tests inject while an operation runs.
type opfFaultKind int

const (
	opfKill  opfFaultKind = iota // SIGKILL, then start the server again
	opfPause                     // SIGSTOP for opfPauseFor, then SIGCONT
)

const (
	opfPauseFor = 2 * time.Second
	// opfFaultDelay is how long after sending the request the fault strikes: the operations
	// take a few milliseconds to a few hundred (a move of the 600 KB subtree below: a copy and
	// two Raft rounds), so the fault lands during the operation; the log says whether the
	// answer had come already.
	opfFaultDelay = 3 * time.Millisecond
	// opfRetryBound bounds the operator's retries after healing: a move left prepared is
	// finished or aborted by recovery within router.MoveDeadline.
	opfRetryBound = 30 * time.Second
	opfBigNodes   = 150      // nodes of the moved subtree besides the keys
	opfBigData    = 4 << 10  // bytes each
	opfBatch      = 25       // creates per multi in the setup
	opfAdminLimit = 20 << 10 // bytes of an admin answer kept
	// opfExitBound bounds the wait for a removed server to exit: its replicas apply their
	// removal within a few Raft rounds, and the membership loop looks every second.
	opfExitBound = 20 * time.Second
)

// opfAdminClient keeps no idle connections (goleak) and bounds each request: a request to a
// paused server would otherwise wait for it.
var opfAdminClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2*router.MoveDeadline + 10*time.Second}

// adminAnswer is the outcome of one admin request.
type adminAnswer struct {
	code int // 0: no answer (err)
	body string
	err  error
	took time.Duration
}

func (a adminAnswer) String() string {
	if a.err != nil {
		return fmt.Sprintf("no answer after %v: %v", a.took.Round(time.Millisecond), a.err)
	}
	return fmt.Sprintf("%d after %v: %s", a.code, a.took.Round(time.Millisecond), strings.TrimSpace(a.body))
}

func opfAdmin(method string, e *corralproc.Ensemble, i int, pathQuery string) adminAnswer {
	return adminDo(opfAdminClient, method, e, i, pathQuery)
}

func adminDo(hc *http.Client, method string, e *corralproc.Ensemble, i int, pathQuery string) adminAnswer {
	began := time.Now()
	req, err := http.NewRequest(method, "http://"+e.AdminAddr(i)+pathQuery, nil)
	if err != nil {
		return adminAnswer{err: err}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return adminAnswer{err: err, took: time.Since(began)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, opfAdminLimit))
	return adminAnswer{code: resp.StatusCode, body: string(body), err: err, took: time.Since(began)}
}

// opfFault strikes server victim with kind while the admin request (to server coord) runs, heals
// it, and returns the request's answer. The request runs on its own goroutine, which this
// function waits for.
func opfFault(t *testing.T, ctx context.Context, e *corralproc.Ensemble, coord int, pathQuery string, victim int, kind opfFaultKind) adminAnswer {
	t.Helper()
	answer := make(chan adminAnswer, 1)
	go func() { answer <- opfAdmin(http.MethodPost, e, coord, pathQuery) }()
	time.Sleep(opfFaultDelay)
	select {
	case a := <-answer:
		answer <- a
		t.Logf("the answer came before the fault: %v", a)
	default:
	}
	struck := time.Now()
	switch kind {
	case opfKill:
		if err := e.Kill(victim); err != nil {
			t.Fatal(err)
		}
		if victim != coord {
			// Not in the way of the request: restart at once, as a supervisor would.
			if err := e.StartOne(ctx, victim); err != nil {
				t.Fatalf("restart server %d: %v", victim+1, err)
			}
		}
	case opfPause:
		pid := e.Pid(victim)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(opfPauseFor)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	a := <-answer
	if kind == opfKill && victim == coord {
		if err := e.StartOne(ctx, victim); err != nil {
			t.Fatalf("restart server %d: %v", victim+1, err)
		}
	}
	t.Logf("fault healed %v after it struck; the request answered %v", time.Since(struck).Round(time.Millisecond), a)
	return a
}

var placementLine = regexp.MustCompile(`(?m)^shard=(\d+) tag=\d+ znodes=(\d+) zxid=(0x[0-9a-f]+)(.*)$`)
var mountLine = regexp.MustCompile(`(?m)^mount=(\S+) shard=(\d+)$`)

// placement is one server's /placement page: per data shard its znode count and last zxid (and
// whether it holds a transaction prepared), and the mounts.
type placement struct {
	znodes   map[uint64]int
	zxid     map[uint64]string
	prepared map[uint64]bool
	mounts   map[string]uint64
}

func readPlacement(e *corralproc.Ensemble, i int) (placement, error) {
	a := opfAdmin(http.MethodGet, e, i, "/placement")
	if a.err != nil || a.code != http.StatusOK {
		return placement{}, fmt.Errorf("server %d /placement: %v", i+1, a)
	}
	p := placement{znodes: map[uint64]int{}, zxid: map[uint64]string{}, prepared: map[uint64]bool{}, mounts: map[string]uint64{}}
	for _, m := range placementLine.FindAllStringSubmatch(a.body, -1) {
		id, _ := strconv.ParseUint(m[1], 10, 64)
		p.znodes[id], _ = strconv.Atoi(m[2])
		p.zxid[id] = m[3]
		p.prepared[id] = strings.Contains(m[4], "prepared_txn")
	}
	for _, m := range mountLine.FindAllStringSubmatch(a.body, -1) {
		id, _ := strconv.ParseUint(m[2], 10, 64)
		p.mounts[m[1]] = id
	}
	return p, nil
}

// quietPlacement waits until every server in servers reports the same zxid and znode count for
// every data shard and none holds a transaction prepared, and returns that placement.
func quietPlacement(t *testing.T, e *corralproc.Ensemble, servers []int) placement {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var first placement
		why := ""
		for _, i := range servers {
			p, err := readPlacement(e, i)
			switch {
			case err != nil:
				why = err.Error()
			case first.znodes == nil:
				first = p
			case !mapsEqual(p.znodes, first.znodes) || !mapsEqual(p.zxid, first.zxid) || !mapsEqual(p.mounts, first.mounts):
				why = fmt.Sprintf("server %d: %v %v %v; server %d: %v %v %v", servers[0]+1, first.znodes, first.zxid, first.mounts,
					i+1, p.znodes, p.zxid, p.mounts)
			}
			for id, ok := range p.prepared {
				if ok {
					why = fmt.Sprintf("server %d: shard %d holds a transaction prepared", i+1, id)
				}
			}
		}
		if why == "" {
			return first
		}
		if time.Now().After(deadline) {
			t.Fatalf("the servers' placement did not settle: %s", why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// walk lists the subtree at root through c (root included), after a sync.
func walk(t *testing.T, c *zk.Conn, root string) []string {
	t.Helper()
	if _, err := c.Sync(root); err != nil {
		t.Fatalf("sync %s: %v", root, err)
	}
	out := []string{root}
	for i := 0; i < len(out); i++ {
		kids, _, err := c.Children(out[i])
		if err != nil {
			t.Fatalf("children of %s: %v", out[i], err)
		}
		for _, k := range kids {
			out = append(out, out[i]+"/"+k)
		}
	}
	slices.Sort(out)
	return out
}

// moveStep is one move of TestFaultDuringMove and the fault injected during it.
type moveStep struct {
	to     uint64
	fault  string // "coordinator", "source leader", "destination leader"
	kind   opfFaultKind
	coord  int // the server whose admin port is asked
	victim int
}

// TestFaultDuringMove moves a subtree (150 nodes of 4 KB, register keys under load, the load's
// holders' ephemerals) around three data shards of a 3-process ensemble, each move with a fault
// during it: SIGKILL of the server coordinating the move, SIGKILL of the destination shard's
// leader, a 2 s pause (SIGSTOP) of the source shard's leader. After healing, the test asks
// again as an operator would until the move is done (200, or 409 "already there"), and checks:
// every server routes the subtree to the destination; every znode of the subtree is there, read
// through every server, and held by the destination shard only (the shards' znode counts on
// /placement: the destination's grew by the subtree's size, the others are back where they were
// before the subtree existed); no acknowledged write is lost, the register history is
// linearizable, no session of the load expired, and the ensemble serves.
func TestFaultDuringMove(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault test: ~40 s (skipped with -short)")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const shards = 4
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: shards, TickTime: rollTickTime,
		KeepDir: os.Getenv(rollKeepEnv) != ""})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	all := []int{0, 1, 2}
	t.Logf("ensemble up in %v (%s)", time.Since(begin).Round(time.Millisecond), e.Dir())
	ids := dataShards(shards)
	names := rollSubtrees(t, "mv", ids, 1)
	root := ids[0]
	mv := "/" + names[ids[1]][0] // on the second data shard; the root shard holds the stubs
	bg := "/" + names[root][0]   // background load on the root shard
	base := quietPlacement(t, e, all)
	t.Logf("moving %s (on shard %d); background load on %s (root shard %d); znodes before: %v", mv, ids[1], bg, root, base.znodes)

	setup := dial(t, e.Addr(0))
	defer setup.Close()
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{mv, mv + "/big"} {
		if _, err := setup.Create(p, nil, 0, acl); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	big := make([]string, opfBigNodes)
	payload := func(p string) []byte { return []byte(strings.Repeat(p+";", opfBigData/(len(p)+1))) }
	for i := 0; i < opfBigNodes; i += opfBatch {
		var ops []any
		for j := i; j < min(i+opfBatch, opfBigNodes); j++ {
			big[j] = fmt.Sprintf("%s/big/n%03d", mv, j)
			ops = append(ops, &zk.CreateRequest{Path: big[j], Data: payload(big[j]), Acl: acl})
		}
		if _, err := setup.Multi(ops...); err != nil {
			t.Fatalf("create %s..: %v", big[i], err)
		}
	}
	var keys []string
	for k := 0; k < 3; k++ {
		keys = append(keys, fmt.Sprintf("%s/k%d", mv, k))
	}
	keys = append(keys, bg+"/k0", bg+"/k1")
	l := startRollLoad(t, e, []string{bg}, keys, mv)
	defer l.close()
	time.Sleep(500 * time.Millisecond)

	leaderOf := func(shard uint64) int {
		t.Helper()
		ls, err := shLeadersAny(ctx, e, all)
		if err != nil {
			t.Fatal(err)
		}
		return int(ls[shard]) - 1
	}
	other := func(not ...int) int {
		for i := range all {
			if !slices.Contains(not, i) {
				return i
			}
		}
		return -1
	}
	from := ids[1]
	steps := []moveStep{{to: ids[2], fault: "coordinator", kind: opfKill}, {to: ids[3], fault: "destination leader", kind: opfKill},
		{to: ids[1], fault: "source leader", kind: opfPause}}
	for n, st := range steps {
		switch st.fault {
		case "coordinator":
			st.coord = 2
			st.victim = st.coord
		case "destination leader":
			st.victim = leaderOf(st.to)
			st.coord = other(st.victim)
		case "source leader":
			st.victim = leaderOf(from)
			st.coord = other(st.victim)
		}
		kind := map[opfFaultKind]string{opfKill: "SIGKILL", opfPause: "SIGSTOP " + opfPauseFor.String()}[st.kind]
		t.Logf("move %d: %s from shard %d to shard %d asked of server %d; %s of the %s, server %d, %v after asking (%.1fs into the load)",
			n+1, mv, from, st.to, st.coord+1, kind, st.fault, st.victim+1, opfFaultDelay, time.Duration(l.rec.Now()-l.began).Seconds())
		q := fmt.Sprintf("/move?path=%s&shard=%d", mv, st.to)
		a := opfFault(t, ctx, e, st.coord, q, st.victim, st.kind)
		attempts := 0
		retried := time.Now()
		for !moveDone(a, st.to) {
			if a.code == http.StatusConflict || a.code == http.StatusBadRequest {
				t.Fatalf("move %d refused: %v", n+1, a)
			}
			if time.Since(retried) > opfRetryBound {
				t.Fatalf("move %d not done after %d retries in %v: %v", n+1, attempts, opfRetryBound, a)
			}
			attempts++
			time.Sleep(200 * time.Millisecond)
			a = opfAdmin(http.MethodPost, e, (st.coord+attempts)%3, q)
			t.Logf("move %d, retry %d via server %d: %v", n+1, attempts, (st.coord+attempts)%3+1, a)
		}
		t.Logf("move %d done (%d retries): %s", n+1, attempts, strings.TrimSpace(a.body))
		p := quietRoutes(t, e, all, mv, st.to)
		t.Logf("move %d: every server routes %s to shard %d; znodes %v", n+1, mv, st.to, p.znodes)
		from = st.to
		time.Sleep(500 * time.Millisecond)
	}
	l.check(all, 0)

	// The subtree: the same nodes through every server, the big nodes' data intact, and the
	// shards' counts say it lives on the destination only.
	var want []string
	for _, i := range all {
		c := dial(t, e.Addr(i))
		got := walk(t, c, mv)
		if want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Errorf("server %d lists %d nodes under %s, server 1 %d: %v vs %v", i+1, len(got), mv, len(want), got, want)
		}
		for _, p := range big {
			d, _, err := c.Get(p)
			if err != nil || string(d) != string(payload(p)) {
				t.Errorf("server %d: %s = %d bytes, %v; want its %d bytes", i+1, p, len(d), err, len(payload(p)))
			}
		}
		c.Close()
	}
	if len(want) < opfBigNodes+2 {
		t.Errorf("%s holds %d nodes, want at least %d", mv, len(want), opfBigNodes+2)
	}
	p := quietPlacement(t, e, all)
	for _, id := range ids[1:] {
		wantN := base.znodes[id]
		if id == from {
			wantN += len(want)
		}
		if p.znodes[id] != wantN {
			t.Errorf("shard %d holds %d znodes, want %d (%d before %s existed%s)", id, p.znodes[id], wantN, base.znodes[id], mv,
				map[bool]string{true: fmt.Sprintf(" + its %d nodes", len(want))}[id == from])
		}
	}
	t.Logf("%s: %d nodes on shard %d only; znodes per shard %v (before: %v); total %v", mv, len(want), from, p.znodes, base.znodes,
		time.Since(begin).Round(time.Millisecond))
}

// moveDone reports whether an answer to POST /move says the subtree is on shard to.
func moveDone(a adminAnswer, to uint64) bool {
	return a.code == http.StatusOK || a.code == http.StatusConflict && strings.Contains(a.body, fmt.Sprintf("is on shard %d already", to))
}

// quietRoutes waits until every server in servers mounts path on shard to, with the same
// placement.
func quietRoutes(t *testing.T, e *corralproc.Ensemble, servers []int, path string, to uint64) placement {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		p := quietPlacement(t, e, servers)
		if p.mounts[path] == to {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the servers mount %s on shard %d, want %d", path, p.mounts[path], to)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// shLeadersAny is shLeaders for any number of Raft groups: group → leader myid, once every
// running server in servers agrees and every group has a running leader.
func shLeadersAny(ctx context.Context, e *corralproc.Ensemble, servers []int) (map[uint64]uint64, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		var agreed map[uint64]uint64
		var why error
		for _, i := range servers {
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			ls, err := e.ShardLeaders(qctx, i)
			cancel()
			if err != nil {
				why = err
				break
			}
			m := map[uint64]uint64{}
			for _, l := range ls {
				if l.HasLeader && l.Leader >= 1 && int(l.Leader) <= e.Size() && e.Running(int(l.Leader)-1) {
					m[l.Shard] = l.Leader
				}
			}
			if len(m) != len(ls) {
				why = fmt.Errorf("server %d: a group without a running leader: %+v", i+1, ls)
				break
			}
			if agreed == nil {
				agreed = m
			} else if !mapsEqual(agreed, m) {
				why = fmt.Errorf("servers disagree on the leaders: %v, server %d: %v", agreed, i+1, m)
				break
			}
		}
		if why == nil {
			return agreed, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, why
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var shardsListLine = regexp.MustCompile(`(?m)^shard=(\d+) tag=\d+ origin=(\w+) running=(\w+) leader=(\d+) term=\d+ has_leader=(\w+)`)

// shardsList is one server's /shards/list: data shard → "origin running has_leader".
func shardsList(e *corralproc.Ensemble, i int) (map[uint64]string, error) {
	a := opfAdmin(http.MethodGet, e, i, "/shards/list")
	if a.err != nil || a.code != http.StatusOK {
		return nil, fmt.Errorf("server %d /shards/list: %v", i+1, a)
	}
	out := map[uint64]string{}
	for _, m := range shardsListLine.FindAllStringSubmatch(a.body, -1) {
		id, _ := strconv.ParseUint(m[1], 10, 64)
		out[id] = m[2] + " running=" + m[3] + " has_leader=" + m[5]
	}
	return out, nil
}

// addStep is one shard add of TestFaultDuringAddShard and the fault injected during it.
type addStep struct {
	fault         string // "coordinator", "root leader"
	kind          opfFaultKind
	coord, victim int
}

// TestFaultDuringAddShard adds three data shards online to a 3-process ensemble with two, each
// add (POST /shards/add?expect=N) with a fault during it: SIGKILL of the server coordinating
// the add, SIGKILL of the root shard's leader (the add is recorded in the root shard), and a
// 2 s pause (SIGSTOP) of the root shard's leader. After healing, the test asks again with the
// same expect, as docs/operations.md says, until the answer is 200 or 409 "there are N+1"
// (the first request had added it), and checks: every server lists exactly the three added
// shards, runs them and knows their leaders (no add counted twice); a subtree under load moved
// onto the last added shard, and a fresh path mounted on each added shard, serve through every
// server; no acknowledged write is lost, the register history is linearizable, and no session
// of the load expired.
func TestFaultDuringAddShard(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault test: ~30 s (skipped with -short)")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const shards = 2
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: shards, TickTime: rollTickTime,
		KeepDir: os.Getenv(rollKeepEnv) != ""})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	all := []int{0, 1, 2}
	t.Logf("ensemble up in %v (%s)", time.Since(begin).Round(time.Millisecond), e.Dir())
	ids := dataShards(shards)
	l, names := startShardLoad(t, e, "as", shards)
	defer l.close()
	time.Sleep(500 * time.Millisecond)

	rootLeader := func(not int) (leader, other int) {
		t.Helper()
		ls, err := shLeadersAny(ctx, e, all)
		if err != nil {
			t.Fatal(err)
		}
		leader = int(ls[ids[0]]) - 1
		for other = 0; other == leader || other == not; other++ {
		}
		return leader, other
	}
	steps := []addStep{{fault: "coordinator", kind: opfKill}, {fault: "root leader", kind: opfKill}, {fault: "root leader", kind: opfPause}}
	var added []uint64
	for n, st := range steps {
		expect := shards + n
		if st.fault == "coordinator" {
			st.coord, st.victim = 2, 2
		} else {
			st.victim, st.coord = rootLeader(-1)
		}
		kind := map[opfFaultKind]string{opfKill: "SIGKILL", opfPause: "SIGSTOP " + opfPauseFor.String()}[st.kind]
		t.Logf("add %d (expect=%d) asked of server %d; %s of the %s, server %d, %v after asking (%.1fs into the load)",
			n+1, expect, st.coord+1, kind, st.fault, st.victim+1, opfFaultDelay, time.Duration(l.rec.Now()-l.began).Seconds())
		q := fmt.Sprintf("/shards/add?expect=%d&timeout=20s", expect)
		a := opfFault(t, ctx, e, st.coord, q, st.victim, st.kind)
		attempts := 0
		retried := time.Now()
		there := fmt.Sprintf("there are %d", expect+1)
		for !(a.code == http.StatusOK || a.code == http.StatusConflict && strings.Contains(a.body, there)) {
			if a.code == http.StatusConflict || a.code == http.StatusBadRequest {
				t.Fatalf("add %d refused: %v", n+1, a)
			}
			if time.Since(retried) > opfRetryBound {
				t.Fatalf("add %d not done after %d retries in %v: %v", n+1, attempts, opfRetryBound, a)
			}
			attempts++
			time.Sleep(200 * time.Millisecond)
			a = opfAdmin(http.MethodPost, e, (st.coord+attempts)%3, q)
			t.Logf("add %d, retry %d via server %d: %v", n+1, attempts, (st.coord+attempts)%3+1, a)
		}
		t.Logf("add %d done (%d retries): %s", n+1, attempts, strings.TrimSpace(a.body))
		id := ids[len(ids)-1] + uint64(n) + 1
		added = append(added, id)
		waitShards(t, e, all, shards+n+1)
		time.Sleep(500 * time.Millisecond)
	}

	// The added shards serve: the first loaded subtree moves onto the last one under load, and
	// a fresh path is mounted on each and written and read through every server.
	moved := "/" + names[ids[0]][0]
	last := added[len(added)-1]
	a := opfAdmin(http.MethodPost, e, 0, fmt.Sprintf("/move?path=%s&shard=%d", moved, last))
	if a.code != http.StatusOK {
		t.Fatalf("move %s onto added shard %d: %v", moved, last, a)
	}
	t.Logf("%s", strings.TrimSpace(a.body))
	quietRoutes(t, e, all, moved, last)
	time.Sleep(time.Second)
	l.check(all, 0)
	c := dial(t, e.Addr(0))
	defer c.Close()
	for _, id := range added {
		p := fmt.Sprintf("/ns%d", id)
		if a := opfAdmin(http.MethodPost, e, int(id)%3, fmt.Sprintf("/move?path=%s&shard=%d", p, id)); a.code != http.StatusOK {
			t.Fatalf("mount %s on added shard %d: %v", p, id, a)
		}
		if _, err := c.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
		if _, err := c.Create(p+"/x", []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s/x: %v", p, err)
		}
	}
	pl := quietPlacement(t, e, all)
	for _, i := range all {
		r := dial(t, e.Addr(i))
		for _, id := range added {
			p := fmt.Sprintf("/ns%d/x", id)
			if _, err := r.Sync(p); err != nil {
				t.Fatalf("server %d: sync %s: %v", i+1, p, err)
			}
			if d, _, err := r.Get(p); err != nil || string(d) != fmt.Sprintf("/ns%d", id) {
				t.Errorf("server %d: %s = %q, %v", i+1, p, d, err)
			}
		}
		r.Close()
	}
	for _, id := range added {
		if pl.mounts[fmt.Sprintf("/ns%d", id)] != id || pl.znodes[id] < 2 {
			t.Errorf("added shard %d: mounts %v, %d znodes; want /ns%d on it", id, pl.mounts, pl.znodes[id], id)
		}
	}
	t.Logf("added shards %v serve; znodes per shard %v; total %v", added, pl.znodes, time.Since(begin).Round(time.Millisecond))
}

// waitShards waits until every server in servers lists n data shards, the initial ones and
// n-initial added ones, all running with a leader.
func waitShards(t *testing.T, e *corralproc.Ensemble, servers []int, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		why := ""
		for _, i := range servers {
			l, err := shardsList(e, i)
			if err != nil {
				why = err.Error()
				break
			}
			if len(l) != n {
				why = fmt.Sprintf("server %d lists %d data shards, want %d: %v", i+1, len(l), n, l)
				break
			}
			for id, s := range l {
				if !strings.Contains(s, "running=true has_leader=true") {
					why = fmt.Sprintf("server %d: shard %d %s", i+1, id, s)
				}
			}
		}
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("shards: %s", why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var memberResult = regexp.MustCompile(`(?m)^shard=(\d+) result=(\w+)`)

// membersDone reports whether an answer to POST /members/add or /members/remove says every
// shard (shards of them) has the change: each line added, promoted, removed or unchanged.
func membersDone(a adminAnswer, shards int) bool {
	if a.code != http.StatusOK {
		return false
	}
	lines := memberResult.FindAllStringSubmatch(a.body, -1)
	for _, m := range lines {
		if m[2] == "failed" {
			return false
		}
	}
	return len(lines) == shards
}

// TestFaultDuringMembership changes the membership of a 3-process ensemble under load, with a
// fault during each change: an observer (a fourth process, started as an observer that joins
// online) is added while the leader of the meta shard is paused for 2 s (SIGSTOP), then server
// 3 is removed while the server coordinating the removal is SIGKILLed. After healing, the test
// asks again (every step is idempotent, docs/operations.md) until every shard answers the
// change, and checks: every remaining server sees, on every shard, voters 1 and 2, the observer
// non-voting and server 3 removed; the observer serves as one (srvr Mode) and answers reads; the
// removed server exits on its own saying so; no acknowledged write is lost (read back through
// the remaining servers and the observer), the register history is linearizable, and no
// session of the load expired — also not those of server 3's clients, which moved to another
// server when it left. A removed server that does not exit, its client port closed, is a known
// bug (docs/reliability.md "Noticed"): the test then stops it, runs the other checks, and is
// skipped with a message saying so if they pass.
func TestFaultDuringMembership(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault test: ~30 s (skipped with -short)")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const shards = 2
	groups := shards + 1 // the meta shard too
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: shards, TickTime: rollTickTime,
		KeepDir: os.Getenv(rollKeepEnv) != ""})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	all := []int{0, 1, 2}
	t.Logf("ensemble up in %v (%s)", time.Since(begin).Round(time.Millisecond), e.Dir())
	l, _ := startShardLoad(t, e, "ms", shards)
	defer l.close()
	time.Sleep(500 * time.Millisecond)

	// The operator's loop: ask again until every shard has the change.
	until := func(what string, first adminAnswer, coord int, q string, servers []int) {
		t.Helper()
		a := first
		attempts := 0
		retried := time.Now()
		for !membersDone(a, groups) {
			if a.code == http.StatusBadRequest {
				t.Fatalf("%s refused: %v", what, a)
			}
			if time.Since(retried) > opfRetryBound {
				t.Fatalf("%s not done after %d retries in %v: %v", what, attempts, opfRetryBound, a)
			}
			attempts++
			time.Sleep(200 * time.Millisecond)
			via := servers[(slices.Index(servers, coord)+attempts)%len(servers)]
			a = opfAdmin(http.MethodPost, e, via, q)
			t.Logf("%s, retry %d via server %d: %v", what, attempts, via+1, a)
		}
		t.Logf("%s done (%d retries): %s", what, attempts, strings.ReplaceAll(strings.TrimSpace(a.body), "\n", "; "))
	}

	// 1. Add an observer while the meta shard's leader is paused.
	obs, err := e.AddObserver()
	if err != nil {
		t.Fatal(err)
	}
	ls, err := shLeadersAny(ctx, e, all)
	if err != nil {
		t.Fatal(err)
	}
	victim := int(ls[1]) - 1
	coord := (victim + 1) % 3
	q := fmt.Sprintf("/members/add?id=%d&raft=%s&observer=true", obs+1, e.RaftAddr(obs))
	t.Logf("add observer %d asked of server %d; SIGSTOP %v of the meta shard's leader, server %d, %v after asking (%.1fs into the load)",
		obs+1, coord+1, opfPauseFor, victim+1, opfFaultDelay, time.Duration(l.rec.Now()-l.began).Seconds())
	until("add observer", opfFault(t, ctx, e, coord, q, victim, opfPause), coord, q, all)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	err = e.WaitReady(wctx)
	wcancel()
	if err != nil {
		t.Fatalf("the observer does not serve: %v", err)
	}
	if m, err := e.Mode(ctx, obs); err != nil || m != "observer" {
		t.Fatalf("server %d: srvr Mode %q, %v; want observer", obs+1, m, err)
	}
	t.Logf("observer %d serves (%.1fs into the load)", obs+1, time.Duration(l.rec.Now()-l.began).Seconds())
	time.Sleep(500 * time.Millisecond)

	// 2. Remove server 3 while the server coordinating it is killed.
	removed, coord := 2, 1
	q = fmt.Sprintf("/members/remove?id=%d", removed+1)
	t.Logf("remove server %d asked of server %d; SIGKILL of the coordinator %v after asking (%.1fs into the load)",
		removed+1, coord+1, opfFaultDelay, time.Duration(l.rec.Now()-l.began).Seconds())
	a := opfFault(t, ctx, e, coord, q, coord, opfKill)
	until("remove server 3", a, coord, q, []int{0, 1})
	// The removed server closes its client port as soon as one of its replicas is gone, and
	// exits once all are (docs/operations.md), also when one of its replicas never applies its own
	// removal (it then counts as removed after 10 s without a leader). One that does not exit is
	// reported with what it shows, stopped as an operator would, and fails the test after the
	// other checks ran.
	knownBug := ""
	deadline := time.Now().Add(opfExitBound)
	for e.Running(removed) && knownBug == "" {
		if time.Now().After(deadline) {
			if ruok, err := corralproc.FourLetterWord(ctx, e.Addr(removed), "ruok"); err == nil {
				t.Errorf("server %d still serves clients (ruok %q) %v after its removal", removed+1, ruok, opfExitBound)
			}
			shardsPage := opfAdmin(http.MethodGet, e, removed, "/shards")
			logged, _ := os.ReadFile(e.LogPath(removed))
			var said []string
			for _, line := range strings.Split(string(logged), "\n") {
				if strings.Contains(line, "removed from the shard") || strings.Contains(line, "stopped serving clients") {
					said = append(said, line)
				}
			}
			knownBug = fmt.Sprintf("server %d, removed from every shard (every shard answered removed), still runs %v later with its "+
				"client port closed: it did not learn its removal from every shard. Its /shards: %s. Its log says only:\n%s",
				removed+1, opfExitBound, strings.ReplaceAll(strings.TrimSpace(shardsPage.body), "\n", "; "), strings.Join(said, "\n"))
			t.Log(knownBug)
			rollSaveLogs(t, e)
			if err := e.Kill(removed); err != nil {
				t.Fatal(err)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if knownBug == "" {
		if err := e.Stop(removed); err != nil {
			t.Fatal(err)
		}
		if logged, _ := os.ReadFile(e.LogPath(removed)); !strings.Contains(string(logged), "removed from the ensemble") {
			t.Errorf("server %d exited without saying it was removed:\n%s", removed+1, corralproc.Tail(logged, 10))
		}
		t.Logf("server %d exited (%.1fs into the load)", removed+1, time.Duration(l.rec.Now()-l.began).Seconds())
	}
	remaining := []int{0, 1, obs}
	memberLine := regexp.MustCompile(`(?m)^shard=(\d+) leader=\d+ voters=(\S*) nonvoting=(\S*) removed=(\S*)$`)
	for _, i := range remaining {
		a := opfAdmin(http.MethodGet, e, i, "/members")
		lines := memberLine.FindAllStringSubmatch(a.body, -1)
		if a.code != http.StatusOK || len(lines) != groups {
			t.Fatalf("server %d /members: %v", i+1, a)
		}
		for _, m := range lines {
			voters, nonvoting, gone := m[2], m[3], m[4]
			if !strings.HasPrefix(voters, "1@") || !strings.Contains(voters, ",2@") || strings.Count(voters, "@") != 2 ||
				!strings.HasPrefix(nonvoting, strconv.Itoa(obs+1)+"@") || strings.Count(nonvoting, "@") != 1 || gone != "3" {
				t.Errorf("server %d, shard %s: voters=%s nonvoting=%s removed=%s; want voters 1 and 2, observer %d, 3 removed",
					i+1, m[1], voters, nonvoting, gone, obs+1)
			}
		}
	}
	time.Sleep(time.Second)
	l.check(remaining, 0)
	t.Logf("total %v", time.Since(begin).Round(time.Millisecond))
	if knownBug != "" {
		// Fixed by counting a leaderless replica as removed (cluster/membership.go,
		// removedByPeersSilence): a server that still does not exit fails the test.
		t.Errorf("the removed server did not exit (every other check passed): %s", knownBug)
	}
}

package faulttest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/linearize"
	"github.com/corral/corral/router"
)

// The workload of a robustness run and its checkers (see robust_test.go for the list).

var rbACL = zk.WorldACL(zk.PermAll)

// Pauses between one worker's operations.
const (
	rbRegisterPause = 5 * time.Millisecond
	rbSeqPause      = 20 * time.Millisecond
	rbLockPoll      = 20 * time.Millisecond
	rbEphPoll       = 100 * time.Millisecond
	rbWatchPause    = 50 * time.Millisecond
	rbLockWrites    = 3 // resource writes per lock hold
)

// rbWorkload is a run's workers, by checker.
type rbWorkload struct {
	registers []*rbRegister
	seq       []*rbSeq
	locks     []*rbLock
	ephs      []*rbEph
	writer    *rbRegister // the watch key's writer
	watcher   *rbWatcher
	pipes     []*rbPipe
	pipeSubs  []string // the pipe workers' subtrees, alternating between the data shards

	seqParent, lockParent, resource, ephParent, watchKey string
}

// rbNameOn returns the first "<prefix><k>" that Corral's hash placement puts on data shard i.
func rbNameOn(prefix string, i int) string {
	for k := 0; ; k++ {
		if name := prefix + strconv.Itoa(k); router.TopLevelShard(name, rbDataShards) == rbDataShards[i] {
			return "/" + name
		}
	}
}

// setup creates the znodes the workload needs and starts its workers.
func (r *rbRun) setup() *rbWorkload {
	t := r.t
	w := &rbWorkload{
		seqParent:  rbNameOn("seq", 0),
		lockParent: rbNameOn("lock", 1),
		resource:   rbNameOn("res", 0),
		ephParent:  rbNameOn("eph", 1),
		watchKey:   rbNameOn("watch", 0),
	}
	setup := r.recClient(0, false)
	defer setup.conn.Close()
	for _, p := range []string{w.seqParent, w.lockParent, w.ephParent} {
		if _, err := setup.conn.Create(p, nil, 0, rbACL); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	// Recorded creates: the model learns the initial values of every recorded key.
	create := func(p, data string) {
		out, err := setup.do(linearize.Input{Kind: linearize.Create, Path: p, Data: data})
		if err != nil || out.Result != linearize.OK {
			t.Fatalf("create %s: %v %v", p, out.Result, err)
		}
	}
	create(w.resource, "t0-init")
	create(w.watchKey, "w0")
	w.pipeSubs = rbNames("pipe", 2)
	for _, sub := range w.pipeSubs {
		if _, err := setup.conn.Create("/"+sub, nil, 0, rbACL); err != nil {
			t.Fatalf("create /%s: %v", sub, err)
		}
	}
	r.subtrees = rbNames("reg", 1)
	for _, sub := range r.subtrees {
		if _, err := setup.conn.Create("/"+sub, nil, 0, rbACL); err != nil {
			t.Fatalf("create /%s: %v", sub, err)
		}
		for k := 0; k < 2; k++ {
			p := fmt.Sprintf("/%s/k%d", sub, k)
			create(p, "init"+p)
			r.regKeys = append(r.regKeys, p)
		}
	}

	n := r.e.Size()
	// Registers: on every server one client per data shard.
	for home := 0; home < n; home++ {
		for i, sub := range r.subtrees {
			c := &shClient{client: r.recClient(home, false), home: home, shard: rbDataShards[i], subtrees: []string{sub},
				keys: []string{"/" + sub + "/k0", "/" + sub + "/k1"}}
			reg := &rbRegister{c: c, w: &rbWorker{name: fmt.Sprintf("register %d (server %d)", c.id, home+1), conn: c.conn}}
			w.registers = append(w.registers, reg)
		}
	}
	for home := 0; home < n; home++ {
		s := &rbSeq{id: home, parent: w.seqParent, acked: map[string]string{}, result: map[string]linearize.Result{}}
		s.w = &rbWorker{name: fmt.Sprintf("seq %d (server %d)", home, home+1), conn: r.dial(home, false, nil)}
		w.seq = append(w.seq, s)

		c := r.recClient(home, true)
		l := &rbLock{id: c.id, c: c, parent: w.lockParent, resource: w.resource}
		l.w = &rbWorker{name: fmt.Sprintf("lock %d (server %d)", c.id, home+1), conn: c.conn, pinned: true}
		w.locks = append(w.locks, l)

		e := &rbEph{id: home, parent: w.ephParent}
		e.w = &rbWorker{name: fmt.Sprintf("ephemeral %d (server %d)", home, home+1), conn: r.dial(home, true, e.event), pinned: true}
		w.ephs = append(w.ephs, e)
	}
	for home := 0; home < n; home++ {
		p := &rbPipe{id: home, subs: w.pipeSubs, addr: []string{r.e.Addr(home)}}
		for i := 0; i < n; i++ {
			if i != home {
				p.addr = append(p.addr, r.e.Addr(i))
			}
		}
		p.w = &rbWorker{name: fmt.Sprintf("pipe %d (server %d)", home, home+1)}
		w.pipes = append(w.pipes, p)
	}
	wc := r.recClient(0, false)
	w.writer = &rbRegister{c: &shClient{client: wc}, w: &rbWorker{name: "watch writer (server 1)", conn: wc.conn}}
	watcherHome := 1 % n
	w.watcher = &rbWatcher{id: r.nextID, rec: r.rec, path: w.watchKey}
	r.nextID++
	w.watcher.w = &rbWorker{name: fmt.Sprintf("watcher (server %d)", watcherHome+1), conn: r.dial(watcherHome, false, w.watcher.connEvent)}

	for _, reg := range w.registers {
		r.spawn(reg.w, func(ctx context.Context) { reg.run(ctx, r) })
	}
	for _, s := range w.seq {
		r.spawn(s.w, func(ctx context.Context) { s.run(ctx, r) })
	}
	for _, l := range w.locks {
		r.spawn(l.w, func(ctx context.Context) { l.run(ctx, r) })
	}
	for _, e := range w.ephs {
		r.spawn(e.w, func(ctx context.Context) { e.run(ctx, r) })
	}
	for _, p := range w.pipes {
		r.spawn(p.w, func(ctx context.Context) { p.run(ctx, r) })
	}
	r.spawn(w.writer.w, func(ctx context.Context) { w.writer.runWatchWriter(ctx, r, w.watchKey) })
	r.spawn(w.watcher.w, func(ctx context.Context) { w.watcher.run(ctx, r) })
	return w
}

// ---- registers ----

// rbRegister is a recorded register client (tests/fault's shClient: setData, getData,
// sync+getData, fresh creates, creates and deletes of its shard's keys).
type rbRegister struct {
	c *shClient
	w *rbWorker
}

func (g *rbRegister) run(ctx context.Context, r *rbRun) {
	for ctx.Err() == nil {
		before := g.c.definite.Load()
		if err := g.c.registerOp(); err != nil {
			r.violation("%v", err)
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		if g.c.definite.Load() > before {
			g.w.ok(r.rec.Now())
		}
		sleepCtx(ctx, rbRegisterPause)
	}
}

// runWatchWriter sets the watch key to "w1", "w2", ... (recorded, unconditional).
func (g *rbRegister) runWatchWriter(ctx context.Context, r *rbRun, path string) {
	for n := 1; ctx.Err() == nil; n++ {
		out, err := g.c.do(linearize.Input{Kind: linearize.Set, Path: path, Data: "w" + strconv.Itoa(n), Version: linearize.AnyVersion})
		switch {
		case err != nil:
			r.violation("watch writer: %v", err)
		case out.Result == linearize.OK:
			g.w.ok(r.rec.Now())
		}
		sleepCtx(ctx, rbWatchPause)
	}
}

// ---- unique sequential names ----

// rbSeq creates sequential children "s-<seq>" with unique data "s<id>-<n>".
type rbSeq struct {
	id     int
	parent string
	w      *rbWorker
	acked  map[string]string           // acknowledged name → data
	result map[string]linearize.Result // data → outcome of its create
	dupAck []string                    // a name acknowledged twice to this client
}

func (s *rbSeq) run(ctx context.Context, r *rbRun) {
	for n := 1; ctx.Err() == nil; n++ {
		data := fmt.Sprintf("s%d-%d", s.id, n)
		name, err := s.w.conn.Create(s.parent+"/s-", []byte(data), zk.FlagSequence, rbACL)
		res, cerr := classify(linearize.Create, err)
		if cerr != nil {
			r.violation("seq %d: %v", s.id, cerr)
			res = linearize.Unknown
		}
		s.result[data] = res
		if res == linearize.OK {
			if _, dup := s.acked[name]; dup {
				s.dupAck = append(s.dupAck, name)
			}
			s.acked[name] = data
			s.w.ok(r.rec.Now())
		}
		sleepCtx(ctx, rbSeqPause)
	}
}

// checkSeq: every acknowledged name is unique over all clients and present with its data; every
// child comes from a create that may have been applied (acknowledged or of unknown outcome, not
// one that was never sent) and no create was applied twice.
func (r *rbRun) checkSeq(w *rbWorkload, checker *zk.Conn) (ops int) {
	ackedBy := map[string]int{}
	results := map[string]linearize.Result{}
	unknown := 0
	for _, s := range w.seq {
		for _, name := range s.dupAck {
			r.violation("seq: name %s acknowledged twice to client %d", name, s.id)
		}
		for name := range s.acked {
			if other, dup := ackedBy[name]; dup {
				r.violation("seq: name %s acknowledged to clients %d and %d", name, other, s.id)
			}
			ackedBy[name] = s.id
		}
		for data, res := range s.result {
			results[data] = res
			if res == linearize.Unknown {
				unknown++
			}
		}
		ops += len(s.result)
	}
	children := r.children(checker, w.seqParent)
	dataOf := map[string]string{}
	childOf := map[string]string{}
	for _, c := range children {
		p := w.seqParent + "/" + c
		d := string(r.get(checker, p))
		dataOf[p] = d
		if prev, dup := childOf[d]; dup {
			r.violation("seq: one create (data %q) applied twice: %s and %s", d, prev, p)
		}
		childOf[d] = p
		switch res, ok := results[d]; {
		case !ok:
			r.violation("seq: child %s holds %q, which no client wrote", p, d)
		case res == linearize.Failed:
			r.violation("seq: child %s comes from a create that was never sent (%q)", p, d)
		}
	}
	missing := 0
	for _, s := range w.seq {
		for name, data := range s.acked {
			got, ok := dataOf[name]
			switch {
			case !ok:
				missing++
				if missing <= 5 {
					r.violation("seq: acknowledged %s (%q, client %d) is missing", name, data, s.id)
				}
			case got != data:
				r.violation("seq: acknowledged %s holds %q, want %q", name, got, data)
			}
		}
	}
	if missing > 5 {
		r.violation("seq: %d acknowledged names missing in all", missing)
	}
	r.t.Logf("seq: %d creates, %d acknowledged, %d of unknown outcome, %d children at the end",
		ops, len(ackedBy), unknown, len(children))
	if len(ackedBy) == 0 {
		r.violation("seq: no create was acknowledged")
	}
	return ops
}

// ---- lock with a fencing token ----

// rbLock takes the lock (an ephemeral sequential child "c<id>-<seq>" of the lock parent; the
// lowest holds) and, holding it, writes its token (the sequence number) into the resource by
// setData with the version it read, unless the resource holds a higher token (fenced). Its
// resource operations are recorded (c).
type rbLock struct {
	id                             int
	c                              *client
	w                              *rbWorker
	parent, resource               string
	holds, fenced, conflicts, lost int
	writes                         int
}

// seqOf is the sequence number of a sequential node's name.
func seqOf(name string) int64 {
	if len(name) < 10 {
		return -1
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// tokenOf is the token in the resource's data "t<token>-...".
func tokenOf(data string) int64 {
	s, _, _ := strings.Cut(strings.TrimPrefix(data, "t"), "-")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func (l *rbLock) run(ctx context.Context, r *rbRun) {
	conn := l.w.conn
	prefix := fmt.Sprintf("c%d-", l.id)
	for ctx.Err() == nil {
		sid := conn.SessionID()
		name, err := conn.Create(l.parent+"/"+prefix, nil, zk.FlagEphemeral|zk.FlagSequence, rbACL)
		res, cerr := classify(linearize.Create, err)
		node := ""
		switch {
		case cerr != nil:
			r.violation("lock %d: %v", l.id, cerr)
		case res == linearize.OK:
			l.w.ok(r.rec.Now())
			node = name
			if conn.SessionID() != sid {
				node = "" // created on a session that has just ended
			}
		case res == linearize.Unknown:
			node = l.adopt(ctx, r, prefix, sid)
		}
		if node == "" {
			sleepCtx(ctx, rbLockPoll)
			continue
		}
		if l.waitLowest(ctx, r, node, sid) {
			l.hold(ctx, r, node, sid)
		}
		if conn.SessionID() == sid {
			conn.Delete(node, -1) // release; on error the session's end removes it
		}
		sleepCtx(ctx, time.Duration(l.c.rng.IntN(30))*time.Millisecond)
	}
}

// adopt finds the node a create of unknown outcome may have made for session sid (keeping the
// lowest, deleting others), so that it cannot block the lock for the session's lifetime.
func (l *rbLock) adopt(ctx context.Context, r *rbRun, prefix string, sid int64) string {
	conn := l.w.conn
	for ctx.Err() == nil && conn.SessionID() == sid {
		children, _, err := conn.Children(l.parent)
		if err != nil {
			sleepCtx(ctx, rbLockPoll)
			continue
		}
		var mine []string
		for _, c := range children {
			if !strings.HasPrefix(c, prefix) {
				continue
			}
			ok, st, err := conn.Exists(l.parent + "/" + c)
			if err != nil {
				mine = nil
				break
			}
			if ok && st.EphemeralOwner == sid {
				mine = append(mine, c)
			}
		}
		if err != nil {
			continue
		}
		l.w.ok(r.rec.Now())
		if len(mine) == 0 {
			return ""
		}
		sort.Slice(mine, func(i, j int) bool { return seqOf(mine[i]) < seqOf(mine[j]) })
		for _, c := range mine[1:] {
			conn.Delete(l.parent+"/"+c, -1)
		}
		return l.parent + "/" + mine[0]
	}
	return ""
}

// waitLowest polls the children until node is the lowest (true) or gone, the session changed
// or the run ends (false).
func (l *rbLock) waitLowest(ctx context.Context, r *rbRun, node string, sid int64) bool {
	conn := l.w.conn
	mySeq := seqOf(node)
	for ctx.Err() == nil && conn.SessionID() == sid {
		children, _, err := conn.Children(l.parent)
		if err == nil {
			l.w.ok(r.rec.Now())
			lowest, present := true, false
			for _, c := range children {
				s := seqOf(c)
				present = present || s == mySeq
				lowest = lowest && s >= mySeq
			}
			if !present {
				l.lost++
				return false
			}
			if lowest {
				return true
			}
		}
		sleepCtx(ctx, rbLockPoll)
	}
	return false
}

// hold does rbLockWrites fenced conditional writes of the resource.
func (l *rbLock) hold(ctx context.Context, r *rbRun, node string, sid int64) {
	l.holds++
	token := seqOf(node)
	for done, tries := 0, 0; done < rbLockWrites && tries < 30 && ctx.Err() == nil && l.w.conn.SessionID() == sid; tries++ {
		out, err := l.c.do(linearize.Input{Kind: linearize.Get, Path: l.resource})
		if err != nil {
			r.violation("lock %d: %v", l.id, err)
			return
		}
		if out.Result != linearize.OK {
			sleepCtx(ctx, rbLockPoll)
			continue
		}
		l.w.ok(r.rec.Now())
		if cur := tokenOf(out.Data); cur > token {
			l.fenced++ // a later holder wrote: this hold is over, as far as the resource is concerned
			return
		}
		l.c.seq++
		data := fmt.Sprintf("t%d-c%d-%d", token, l.id, l.c.seq)
		set, err := l.c.do(linearize.Input{Kind: linearize.Set, Path: l.resource, Data: data, Version: out.Version})
		if err != nil {
			r.violation("lock %d: %v", l.id, err)
			return
		}
		switch set.Result {
		case linearize.OK:
			l.w.ok(r.rec.Now())
			l.writes++
			done++
		case linearize.BadVersion:
			l.w.ok(r.rec.Now())
			l.conflicts++
		}
	}
}

// checkLock logs the lock workers' counts and reports lockViolations.
func (r *rbRun) checkLock(w *rbWorkload, h linearize.History) (ops int) {
	violations, versions, maxToken := lockViolations(h, w.resource)
	for _, v := range violations {
		r.violation("%s", v)
	}
	var holds, fenced, conflicts, writes, lost int
	for _, l := range w.locks {
		holds, fenced, conflicts, writes, lost = holds+l.holds, fenced+l.fenced, conflicts+l.conflicts, writes+l.writes, lost+l.lost
		ops += int(l.w.okOps.Load())
	}
	r.t.Logf("lock: %d holds, %d acknowledged resource writes, %d fenced, %d version conflicts, %d lock nodes lost; %d resource versions seen, up to token %d",
		holds, writes, fenced, conflicts, lost, versions, maxToken)
	if writes == 0 {
		r.violation("lock: no resource write was acknowledged")
	}
	return ops
}

// stateByVersion collects every state of path the history shows, by data version: what reads
// returned, what acknowledged sets and creates wrote. A version with two different values is
// reported. The node must never be deleted.
func stateByVersion(h linearize.History, path, what string) (map[int32]string, []string) {
	var violations []string
	byVersion := map[int32]string{}
	for _, op := range h {
		if op.Input.Path != path || op.Output.Result != linearize.OK {
			continue
		}
		var v int32
		var d string
		switch op.Input.Kind {
		case linearize.Get:
			v, d = op.Output.Version, op.Output.Data
		case linearize.Set:
			v, d = op.Output.Version, op.Input.Data
		case linearize.Create:
			v, d = 0, op.Input.Data
		default:
			continue
		}
		if prev, ok := byVersion[v]; ok && prev != d {
			violations = append(violations, fmt.Sprintf("%s: %s version %d holds %q and %q", what, path, v, prev, d))
		}
		byVersion[v] = d
	}
	return byVersion, violations
}

// lockViolations checks the fenced resource: one value per version, and in version order the
// tokens never decrease and each token's writes are contiguous (no two holders' accepted
// writes interleave).
func lockViolations(h linearize.History, resource string) (violations []string, versions int, maxToken int64) {
	byVersion, violations := stateByVersion(h, resource, "lock")
	sorted := slices.Sorted(maps.Keys(byVersion))
	maxToken = -1
	lastAt := map[int64]int32{}
	for i, v := range sorted {
		tok := tokenOf(byVersion[v])
		if tok < maxToken {
			violations = append(violations, fmt.Sprintf("lock: token went back: version %d holds %q after version %d held token %d",
				v, byVersion[v], sorted[i-1], tokenOf(byVersion[sorted[i-1]])))
		}
		if at, seen := lastAt[tok]; seen && tokenOf(byVersion[sorted[i-1]]) != tok {
			violations = append(violations, fmt.Sprintf("lock: writes of token %d interleave with another holder's (versions %d and %d)", tok, at, v))
		}
		lastAt[tok] = v
		maxToken = max(maxToken, tok)
	}
	return violations, len(sorted), maxToken
}

// writeOrderViolations checks that the watch writer's values ("w<n>", n growing in the order
// sent) grow with the key's version: a session's writes apply in the order it sent them.
func writeOrderViolations(h linearize.History, key string) []string {
	byVersion, violations := stateByVersion(h, key, "watch")
	sorted := slices.Sorted(maps.Keys(byVersion))
	for i := 1; i < len(sorted); i++ {
		a, _ := strconv.Atoi(strings.TrimPrefix(byVersion[sorted[i-1]], "w"))
		b, _ := strconv.Atoi(strings.TrimPrefix(byVersion[sorted[i]], "w"))
		if b <= a {
			violations = append(violations, fmt.Sprintf("watch: the writer's writes applied out of order: version %d holds %q after version %d held %q",
				sorted[i], byVersion[sorted[i]], sorted[i-1], byVersion[sorted[i-1]]))
		}
	}
	return violations
}

// ---- ephemerals ----

// rbEph keeps one ephemeral "e<id>-g<gen>" for its current session (a new one after an expiry)
// and checks every rbEphPoll that it is there.
type rbEph struct {
	id     int
	parent string
	w      *rbWorker

	gen int // used by the worker goroutine only

	mu       sync.Mutex
	expired  int      // times told its session expired
	nodes    []rbNode // created, in order
	vanished []rbNode // seen missing while their session was current
	wrongOwn []string // seen owned by another session
}

type rbNode struct {
	path string
	sid  int64
}

func (e *rbEph) event(ev zk.Event) {
	if ev.Type == zk.EventSession && ev.State == zk.StateExpired {
		e.mu.Lock()
		e.expired++
		e.mu.Unlock()
	}
}

func (e *rbEph) run(ctx context.Context, r *rbRun) {
	conn := e.w.conn
	var cur *rbNode
	for ctx.Err() == nil {
		sid := conn.SessionID()
		if cur != nil && cur.sid != sid {
			cur = nil // the session expired: its node must go; make one for the new session
		}
		if cur == nil {
			if sid == 0 || conn.State() != zk.StateHasSession {
				sleepCtx(ctx, rbEphPoll)
				continue
			}
			e.gen++
			n := rbNode{path: fmt.Sprintf("%s/e%d-g%d", e.parent, e.id, e.gen), sid: sid}
			_, err := conn.Create(n.path, nil, zk.FlagEphemeral, rbACL)
			res, cerr := classify(linearize.Create, err)
			switch {
			case cerr != nil || res == linearize.NodeExists:
				r.violation("ephemeral %d: create %s: %v %v", e.id, n.path, res, err)
			case res == linearize.OK:
				e.w.ok(r.rec.Now())
				e.mu.Lock()
				e.nodes = append(e.nodes, n)
				e.mu.Unlock()
				cur = &n
			}
			// A create of unknown outcome that applied made a node of this session, which the
			// final check accepts while the session lives, and requires gone once it expired.
			sleepCtx(ctx, rbEphPoll)
			continue
		}
		ok, st, err := conn.Exists(cur.path)
		if err == nil && conn.SessionID() == cur.sid {
			e.w.ok(r.rec.Now())
			e.mu.Lock()
			switch {
			case !ok:
				e.vanished = append(e.vanished, *cur)
				cur = nil
			case st.EphemeralOwner != cur.sid:
				e.wrongOwn = append(e.wrongOwn, fmt.Sprintf("%s owned by %#x, want %#x", cur.path, st.EphemeralOwner, cur.sid))
			}
			e.mu.Unlock()
		}
		sleepCtx(ctx, rbEphPoll)
	}
}

// checkEph runs with the ephemeral clients stopped but their sessions open: a node of a session
// that is still the client's (never told expired) is there and owned by it, and was never seen
// missing; a node of an earlier session is gone; every child is owned by a current session.
// Then it closes the sessions and waits for all children to go.
func (r *rbRun) checkEph(w *rbWorkload, checker *zk.Conn) (ops int) {
	live := map[int64]int{}
	for _, e := range w.ephs {
		live[e.w.conn.SessionID()] = e.id
	}
	expired, nodes := 0, 0
	for _, e := range w.ephs {
		ops += int(e.w.okOps.Load())
		cur := e.w.conn.SessionID()
		e.mu.Lock()
		expired += e.expired
		nodes += len(e.nodes)
		for _, s := range e.wrongOwn {
			r.violation("ephemeral %d: %s", e.id, s)
		}
		for _, n := range e.vanished {
			if n.sid == cur {
				r.violation("ephemeral %d: %s vanished while its session %#x lived (the client was never told it expired)", e.id, n.path, n.sid)
			}
		}
		for _, n := range e.nodes {
			ok, st := r.exists(checker, n.path)
			switch {
			case n.sid == cur && !slices.Contains(e.vanished, n) && !ok:
				r.violation("ephemeral %d: %s of the live session %#x is missing at the end", e.id, n.path, n.sid)
			case n.sid == cur && ok && st.EphemeralOwner != n.sid:
				r.violation("ephemeral %d: %s is owned by %#x, want %#x", e.id, n.path, st.EphemeralOwner, n.sid)
			case n.sid != cur && ok:
				r.violation("ephemeral %d: %s of session %#x outlived it (the client was told expired %d times; now on %#x)",
					e.id, n.path, n.sid, e.expired, cur)
			}
		}
		e.mu.Unlock()
	}
	children := r.children(checker, w.ephParent)
	for _, c := range children {
		p := w.ephParent + "/" + c
		if ok, st := r.exists(checker, p); ok {
			if _, isLive := live[st.EphemeralOwner]; !isLive {
				r.violation("ephemeral: %s is owned by session %#x, which no client holds", p, st.EphemeralOwner)
			}
		}
	}
	// Closing the sessions removes their ephemerals.
	for _, e := range w.ephs {
		e.w.conn.Close()
	}
	deadline := time.Now().Add(rbEphGoneBound)
	for {
		left := r.children(checker, w.ephParent)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			r.violation("ephemeral: %v still there %v after their sessions were closed", left, rbEphGoneBound)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.t.Logf("ephemeral: %d nodes created, %d children at the end, sessions told expired %d times", nodes, len(children), expired)
	return ops
}

// ---- watch delivery ----

// rbWatcher reads the watch key with a data watch (recorded as plain reads) and waits for the
// watch's event before it reads again.
type rbWatcher struct {
	id   int
	rec  *linearize.Recorder
	path string
	w    *rbWorker

	mu                           sync.Mutex
	maxSeen                      int32
	events, rearms, reads, other int
	// staleAfterMove counts reads after an event that showed the version the watch was set at
	// because the session had reconnected in between (see run).
	staleAfterMove int
	// connects counts the session's (re)connections (StateHasSession events).
	connects atomic.Int64
}

func (wt *rbWatcher) connEvent(ev zk.Event) {
	if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
		wt.connects.Add(1)
	}
}

func (wt *rbWatcher) seen() int32 {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.maxSeen
}

func (wt *rbWatcher) run(ctx context.Context, r *rbRun) {
	conn := wt.w.conn
	var (
		armedSid     int64 = -1
		armedVersion int32 = -1
		changed      bool  // the watch armed at armedVersion fired NodeDataChanged
		// eventConn is the session's connection count when the event arrived. A notification
		// carries no zxid (ZooKeeper's header says -1, and so does Corral's), so a client that
		// reconnects after an event may be served by a server that has not applied the change
		// yet, in ZooKeeper as in Corral: the next read then shows the old version. Only a read
		// on the connection that delivered the event must show a newer one.
		eventConn int64
	)
	for ctx.Err() == nil {
		sid := conn.SessionID()
		p := wt.rec.Begin(wt.id, linearize.Input{Kind: linearize.Get, Path: wt.path})
		data, st, ch, err := conn.GetW(wt.path)
		session := conn.SessionID()
		if session != sid {
			session = 0
		}
		res, cerr := classify(linearize.Get, err)
		if cerr != nil {
			p.Unknown(session)
			r.violation("watcher: %v", cerr)
			sleepCtx(ctx, rbWatchPause)
			continue
		}
		out := linearize.Output{Result: res}
		if res == linearize.OK {
			out.Data, out.Version, out.Czxid, out.Mzxid = string(data), st.Version, st.Czxid, st.Mzxid
		}
		p.End(session, out)
		if res != linearize.OK {
			if res == linearize.NoNode {
				r.violation("watcher: %s is gone", wt.path)
			}
			sleepCtx(ctx, rbWatchPause)
			continue
		}
		wt.w.ok(r.rec.Now())
		if session != 0 && session == armedSid {
			if st.Version < armedVersion {
				r.violation("watcher: read version %d after version %d on session %#x", st.Version, armedVersion, session)
			}
			if changed && st.Version <= armedVersion && wt.connects.Load() != eventConn {
				wt.mu.Lock()
				wt.staleAfterMove++
				wt.mu.Unlock()
			} else if changed && st.Version <= armedVersion {
				r.violation("watcher: NodeDataChanged for the watch set at version %d, but the next read shows version %d (a duplicate or spurious event)",
					armedVersion, st.Version)
			}
		}
		armedSid, armedVersion, changed = session, st.Version, false
		wt.mu.Lock()
		wt.reads++
		wt.maxSeen = max(wt.maxSeen, st.Version)
		wt.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case ev := <-ch:
			wt.mu.Lock()
			switch ev.Type {
			case zk.EventNodeDataChanged:
				wt.events++
				changed = true
				eventConn = wt.connects.Load()
			case zk.EventNotWatching:
				wt.rearms++ // the session expired (or the client closed): re-arm on the next one
				armedSid = -1
			default:
				wt.other++
			}
			wt.mu.Unlock()
		}
	}
}

// checkWatch waits for the watcher to see the final version of the key (read by the final
// reads), stops it, and checks that the writer's values grow with the version in every state
// the history shows (a session's writes apply in the order sent).
func (r *rbRun) checkWatch(w *rbWorkload, h linearize.History) (ops int) {
	final := int32(-1)
	for _, op := range h {
		if op.Input.Path == w.watchKey && op.Input.Synced && op.Output.Result == linearize.OK {
			final = max(final, op.Output.Version)
		}
	}
	deadline := time.Now().Add(rbWatchBound)
	for w.watcher.seen() < final && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stopWorker(w.watcher.w)
	wt := w.watcher
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.maxSeen < final {
		r.violation("watcher: saw version %d at most, the final version is %d (%v after the load ended)", wt.maxSeen, final, rbWatchBound)
	}
	if vs := writeOrderViolations(h, w.watchKey); len(vs) > 0 {
		for _, v := range vs {
			r.violation("%s", v)
		}
		// The writes involved, for the report: the writer's sets whose values were applied late.
		for _, op := range h {
			if op.Input.Path != w.watchKey || op.Input.Kind != linearize.Set || op.Output.Result == linearize.OK {
				continue
			}
			seen := "never read"
			for _, rd := range h {
				if rd.Input.Path == w.watchKey && rd.Input.Kind == linearize.Get && rd.Output.Result == linearize.OK &&
					rd.Output.Data == op.Input.Data {
					seen = fmt.Sprintf("first read by %v", rd)
					break
				}
			}
			r.t.Logf("watch writer's set without acknowledgement: %v; %s", op, seen)
		}
	}
	// Writes of unknown outcome, and how many of them a read showed applied (each is a chance
	// for the order check to fail).
	byVersion, _ := stateByVersion(h, w.watchKey, "watch")
	applied := map[string]bool{}
	for _, d := range byVersion {
		applied[d] = true
	}
	unknown, unknownApplied := 0, 0
	for _, op := range h {
		if op.Input.Path == w.watchKey && op.Input.Kind == linearize.Set && op.Output.Result == linearize.Unknown {
			unknown++
			if applied[op.Input.Data] {
				unknownApplied++
			}
		}
	}
	r.t.Logf("watch: %d writes acknowledged, %d of unknown outcome (%d of them seen applied), %d reads, %d change events, %d re-arms after NotWatching, %d other events, %d reads of the old version after an event and a reconnect; final version %d, watcher saw %d",
		w.writer.w.okOps.Load(), unknown, unknownApplied, wt.reads, wt.events, wt.rearms, wt.other, wt.staleAfterMove, final, wt.maxSeen)
	if wt.events == 0 {
		r.violation("watch: no change event delivered")
	}
	return int(w.writer.w.okOps.Load()) + wt.reads
}

// ---- final reads and the whole check ----

// retry runs fn until it succeeds (bounded by finalBound); a failure is a violation.
func (r *rbRun) retry(what string, fn func() error) bool {
	deadline := time.Now().Add(finalBound)
	for {
		err := fn()
		if err == nil {
			return true
		}
		if time.Now().After(deadline) {
			r.violation("%s: no answer in %v: %v", what, finalBound, err)
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *rbRun) children(c *zk.Conn, p string) []string {
	var out []string
	r.retry("children "+p, func() error {
		if _, err := c.Sync(p); err != nil {
			return err
		}
		var err error
		out, _, err = c.Children(p)
		return err
	})
	sort.Strings(out)
	return out
}

func (r *rbRun) get(c *zk.Conn, p string) []byte {
	var out []byte
	r.retry("get "+p, func() error {
		var err error
		out, _, err = c.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	return out
}

func (r *rbRun) exists(c *zk.Conn, p string) (bool, *zk.Stat) {
	var ok bool
	var st *zk.Stat
	r.retry("exists "+p, func() error {
		var err error
		ok, st, err = c.Exists(p)
		return err
	})
	return ok, st
}

// check runs the final reads and every checker; the workers are stopped except the watcher.
func (r *rbRun) check(w *rbWorkload, res *rbResult) {
	t := r.t
	h := r.rec.History()
	written := map[string]bool{}
	for _, op := range h {
		if op.Input.Kind != linearize.Get {
			written[op.Input.Path] = true
		}
	}
	var others []string
	for p := range written {
		if !slices.Contains(r.regKeys, p) {
			others = append(others, p)
		}
	}
	sort.Strings(others)
	for srv := 0; srv < r.e.Size(); srv++ {
		paths := r.regKeys
		if srv == 0 {
			paths = append(slices.Clone(r.regKeys), others...)
		}
		id := r.nextID
		r.nextID++
		shFinalReads(t, r.rec, id, r.e.Addr(srv), append(paths, w.watchKey, w.resource))
	}
	h = r.rec.History()
	res.ops["watch"] = r.checkWatch(w, h)
	h = r.rec.History()

	regOps := 0
	for _, op := range h {
		if strings.HasPrefix(op.Input.Path, "/"+r.subtrees[0]+"/") || strings.HasPrefix(op.Input.Path, "/"+r.subtrees[1]+"/") {
			regOps++
		}
	}
	res.ops["registers"] = regOps
	ok, info := linearize.Check(h, 2*checkTimeout)
	t.Logf("porcupine: %s (%d recorded operations)", info, len(h))
	if !ok {
		r.violation("porcupine: %v", info.Err())
		if r.target.name == rbCorral.name {
			reportIllegalPaths(t, h, append(append(slices.Clone(r.regKeys), w.resource, w.watchKey), others...))
		}
	}
	if err := linearize.Validate(h); err != nil {
		r.violation("validators: %v", err)
	}
	res.ops["lock"] = r.checkLock(w, h)

	checker := r.dial(0, false, nil)
	defer checker.Close()
	res.ops["seq"] = r.checkSeq(w, checker)
	res.ops["ephemeral"] = r.checkEph(w, checker)
	res.ops["pipe"] = r.checkPipe(w, checker)
}

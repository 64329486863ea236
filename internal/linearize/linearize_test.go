package linearize

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Shorthands for hand-written histories. Times are abstract ticks; zxids small integers.

func get(p string) Input  { return Input{Kind: Get, Path: p} }
func sget(p string) Input { return Input{Kind: Get, Path: p, Synced: true} }
func set(p, d string, v int32) Input {
	return Input{Kind: Set, Path: p, Data: d, Version: v}
}
func create(p, d string) Input    { return Input{Kind: Create, Path: p, Data: d} }
func del(p string, v int32) Input { return Input{Kind: Delete, Path: p, Version: v} }
func res(r Result) Output         { return Output{Result: r} }
func newVer(v int32, c, m int64) Output {
	return Output{Result: OK, Version: v, Czxid: c, Mzxid: m}
}
func val(d string, v int32, c, m int64) Output {
	return Output{Result: OK, Data: d, Version: v, Czxid: c, Mzxid: m}
}

var (
	ok      = res(OK)
	unknown = res(Unknown)
)

// op builds an operation of client (session client+1); an Unknown output gets an open return.
func op(client int, call, ret int64, in Input, out Output) Op {
	if out.Result == Unknown {
		ret = Open
	}
	return Op{Client: client, Session: int64(client + 1), Input: in, Output: out, Call: call, Return: ret}
}

func history(ops ...Op) History { return History(ops) }

func mustCheck(t *testing.T, h History, want bool) CheckInfo {
	t.Helper()
	t.Setenv(VisualizationDirEnv, t.TempDir())
	got, info := Check(h, 10*time.Second)
	if got != want {
		t.Fatalf("Check = %v, want %v (%s)", got, want, info)
	}
	if !want {
		if info.Result != porcupine.Illegal || !errors.Is(info.Err(), ErrNotLinearizable) {
			t.Fatalf("info = %s, err %v", info, info.Err())
		}
		if st, err := os.Stat(info.Visualization); err != nil || st.Size() == 0 {
			t.Fatalf("visualization %q: %v", info.Visualization, err)
		}
	} else if info.Err() != nil {
		t.Fatalf("info.Err() = %v", info.Err())
	}
	return info
}

func TestStep(t *testing.T) {
	none := Znode{}
	a := Znode{Exists: true, Data: "a", Version: 0, Czxid: 10, Mzxid: 10, Floor: 10}
	a1 := Znode{Exists: true, Data: "b", Version: 1, Czxid: 10, Mzxid: 20, Floor: 20}
	fresh := Znode{Exists: true, Data: "a", Base: 5, Floor: 5} // created, zxids not known yet
	tests := []struct {
		z    Znode
		in   Input
		out  Output
		ok   bool
		want Znode
	}{
		0:  {none, get("/k"), res(NoNode), true, none},
		1:  {none, get("/k"), val("a", 0, 1, 1), false, none},
		2:  {a, get("/k"), val("a", 0, 10, 10), true, a},
		3:  {a, get("/k"), val("a", 1, 10, 10), false, a}, // wrong version
		4:  {a, get("/k"), val("a", 0, 10, 11), false, a}, // wrong mzxid
		5:  {a, get("/k"), val("x", 0, 10, 10), false, a}, // wrong data
		6:  {a, set("/k", "b", 0), newVer(1, 10, 20), true, a1},
		7:  {a, set("/k", "b", AnyVersion), newVer(1, 10, 20), true, a1},
		8:  {a, set("/k", "b", 0), newVer(2, 10, 20), false, a}, // version must grow by one
		9:  {a, set("/k", "b", 0), newVer(1, 10, 9), false, a},  // zxid went back
		10: {a, set("/k", "b", 3), res(BadVersion), true, a},    // stale version
		11: {a, set("/k", "b", 0), res(BadVersion), false, a},   // version matched
		12: {none, set("/k", "b", 0), res(NoNode), true, none},  // no node
		13: {a, create("/k", "c"), res(NodeExists), true, a},    // exists
		14: {none, create("/k", "c"), ok, true, Znode{Exists: true, Data: "c"}},
		15: {a, create("/k", "c"), ok, false, a},
		16: {a, del("/k", 0), ok, true, Znode{Floor: 10}},
		17: {a, del("/k", 1), res(BadVersion), true, a},
		18: {a, del("/k", 1), ok, false, a},
		19: {none, del("/k", AnyVersion), res(NoNode), true, none},
		// Unknown outcomes take effect when their preconditions hold, else change nothing.
		20: {a, set("/k", "b", 0), unknown, true, Znode{Exists: true, Data: "b", Version: 1, Czxid: 10, Floor: 10}},
		21: {a, set("/k", "b", 5), unknown, true, a},
		22: {a, del("/k", AnyVersion), unknown, true, Znode{Floor: 10}},
		23: {none, create("/k", "c"), unknown, true, Znode{Exists: true, Data: "c"}},
		24: {a, create("/k", "c"), unknown, true, a},
		25: {a, get("/k"), unknown, true, a},
		26: {a, set("/k", "b", 0), res(Failed), true, a},
		// Zxids not known yet are learned from a read, above the bounds.
		27: {fresh, get("/k"), val("a", 0, 7, 7), true, Znode{Exists: true, Data: "a", Czxid: 7, Mzxid: 7, Base: 5, Floor: 7}},
		28: {fresh, get("/k"), val("a", 0, 5, 7), false, fresh}, // czxid not above the earlier writes
		29: {fresh, get("/k"), val("a", 0, 8, 7), false, fresh}, // czxid above mzxid
	}
	for i, tt := range tests {
		ok, got := Step(tt.z, tt.in, tt.out)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("%d: Step(%v, %s) = %v, %v; want %v, %v", i, tt.z, describeOperation(tt.in, tt.out), ok, got, tt.ok, tt.want)
		}
	}
}

func TestRecorder(t *testing.T) {
	r := NewRecorder()
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				p := r.Begin(c, set("/k", "d", AnyVersion))
				if i%10 == 0 {
					p.Unknown(int64(c + 1))
				} else {
					p.End(int64(c+1), newVer(1, 1, 2))
				}
			}
		}()
	}
	abandoned := r.Begin(9, create("/x", "y"))
	wg.Wait()
	h := r.History()
	if len(h) != 801 {
		t.Fatalf("%d operations recorded, want 801", len(h))
	}
	unknowns := 0
	for i, op := range h {
		if i > 0 && h[i-1].Call > op.Call {
			t.Fatalf("history not ordered by call at %d", i)
		}
		switch op.Output.Result {
		case Unknown:
			unknowns++
			if op.Return != Open {
				t.Fatalf("unknown outcome with return %d", op.Return)
			}
		case OK:
			if op.Return < op.Call || op.Return == Open {
				t.Fatalf("bad interval %v", op)
			}
		}
	}
	if unknowns != 81 {
		t.Fatalf("%d unknown outcomes, want 80 + the abandoned one", unknowns)
	}
	abandoned.End(10, ok)
	h = r.History()
	for _, op := range h {
		if op.Client == 9 && (op.Output.Result != OK || op.Return == Open || len(h) != 801) {
			t.Fatalf("ended operation not recorded: %d operations, %v", len(h), op)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("ending an operation twice did not panic")
		}
	}()
	abandoned.End(10, ok)
}

// TestCheckAcceptsConcurrentHistory: overlapping writes may be ordered either way; reads in the
// overlap may see either; a failed CAS and a NONODE fit; plain (unsynced) reads are left out.
func TestCheckAcceptsConcurrentHistory(t *testing.T) {
	h := history(
		op(0, 0, 10, create("/a", "a0"), ok),
		op(1, 1, 9, create("/a", "a1"), res(NodeExists)),
		op(2, 2, 8, sget("/a"), res(NoNode)), // before the create took effect
		op(0, 20, 40, set("/a", "x", 0), newVer(1, 100, 110)),
		op(1, 21, 41, set("/a", "y", AnyVersion), newVer(2, 100, 120)),
		op(2, 22, 30, sget("/a"), val("a0", 0, 100, 100)),
		op(2, 31, 39, sget("/a"), val("x", 1, 100, 110)),
		op(2, 45, 50, sget("/a"), val("y", 2, 100, 120)),
		op(0, 45, 50, set("/a", "z", 1), res(BadVersion)),
		op(3, 45, 50, get("/a"), val("a0", 0, 100, 100)), // stale plain read: allowed, left out
		op(0, 60, 70, del("/a", 2), ok),
		op(1, 61, 71, sget("/a"), val("y", 2, 100, 120)),
		op(2, 80, 90, sget("/a"), res(NoNode)),
		op(0, 0, 5, create("/b", "b0"), ok),
		op(0, 6, 9, sget("/b"), val("b0", 0, 50, 50)),
	)
	info := mustCheck(t, h, true)
	if info.Paths != 2 || info.LeftOut != 1 || info.Checked != len(h)-1 {
		t.Fatalf("info %s", info)
	}
	if err := Validate(h); err != nil {
		t.Fatal(err)
	}
}

// TestCheckUnknownOutcomes: a write whose outcome is unknown may have been applied (a later read
// sees it, even long after the client gave up) or not (later reads and CASes never see it).
func TestCheckUnknownOutcomes(t *testing.T) {
	base := []Op{
		op(0, 0, 10, create("/k", "a"), ok),
		op(1, 20, 0, set("/k", "lost?", 0), unknown),
		op(1, 21, 0, del("/k", 0), unknown),
	}
	applied := history(append(base[:2:2],
		op(2, 30, 40, sget("/k"), val("a", 0, 1, 1)),
		op(2, 200, 210, sget("/k"), val("lost?", 1, 1, 9)), // applied late
		op(0, 220, 230, set("/k", "b", 1), newVer(2, 1, 12)),
		op(2, 240, 250, sget("/k"), val("b", 2, 1, 12)),
	)...)
	notApplied := history(append(base[:2:2],
		op(2, 30, 40, sget("/k"), val("a", 0, 1, 1)),
		op(0, 50, 60, set("/k", "b", 0), newVer(1, 1, 5)), // the CAS from v0 wins, so "lost?" never applied
		op(2, 200, 210, sget("/k"), val("b", 1, 1, 5)),
	)...)
	deleted := history(append(base[:1:1], base[2],
		op(2, 30, 40, sget("/k"), res(NoNode)),
		op(0, 50, 60, create("/k", "c"), ok),
		op(2, 70, 80, sget("/k"), val("c", 0, 20, 20)),
	)...)
	notDeleted := history(append(base[:1:1], base[2],
		op(2, 30, 40, sget("/k"), val("a", 0, 1, 1)),
		op(0, 50, 60, set("/k", "b", 0), newVer(1, 1, 5)),
		op(2, 70, 80, sget("/k"), val("b", 1, 1, 5)),
	)...)
	for name, h := range map[string]History{"applied": applied, "notApplied": notApplied, "deleted": deleted, "notDeleted": notDeleted} {
		t.Run(name, func(t *testing.T) {
			info := mustCheck(t, h, true)
			if info.UnknownWrites != 1 {
				t.Fatalf("info %s", info)
			}
			if err := Validate(h); err != nil {
				t.Fatal(err)
			}
		})
	}
	// But an unknown write cannot take effect before it was called.
	early := history(
		op(0, 0, 10, create("/k", "a"), ok),
		op(2, 20, 30, sget("/k"), val("later", 1, 1, 9)),
		op(1, 40, 0, set("/k", "later", 0), unknown),
	)
	mustCheck(t, early, false)
}

// TestCheckStaleRead: a synced read that begins after a write was acknowledged and returns the
// older value is not linearizable. The same read without sync is allowed by ZooKeeper.
func TestCheckStaleRead(t *testing.T) {
	h := history(
		op(0, 0, 10, create("/k", "a"), ok),
		op(0, 20, 30, set("/k", "b", 0), newVer(1, 1, 2)),
		op(1, 40, 50, sget("/k"), val("a", 0, 1, 1)),
	)
	mustCheck(t, h, false)
	if err := ValidateNoLostWrites(h); !errors.Is(err, ErrLostAcknowledgedWrite) {
		t.Fatalf("ValidateNoLostWrites = %v", err)
	}
	h[2].Input.Synced = false
	h = append(h, op(1, 60, 70, sget("/k"), val("b", 1, 1, 2)))
	mustCheck(t, h, true)
}

// TestCheckLostWrite: an acknowledged create and set that a final read does not show.
func TestCheckLostWrite(t *testing.T) {
	for name, h := range map[string]History{
		"create": {
			op(0, 0, 10, create("/k", "a"), ok),
			op(1, 5, 0, del("/k", AnyVersion), res(Failed)), // never sent: cannot explain the absence
			op(2, 100, 110, sget("/k"), res(NoNode)),
		},
		"set": {
			op(0, 0, 10, create("/k", "a"), ok),
			op(0, 20, 30, set("/k", "b", AnyVersion), newVer(1, 1, 2)),
			op(1, 25, 35, set("/k", "c", 0), res(BadVersion)),
			op(2, 100, 110, sget("/k"), val("a", 0, 1, 1)),
		},
		"delete": {
			op(0, 0, 10, create("/k", "a"), ok),
			op(0, 20, 30, del("/k", 0), ok),
			op(2, 100, 110, sget("/k"), val("a", 0, 1, 1)),
		},
	} {
		t.Run(name, func(t *testing.T) {
			mustCheck(t, h, false)
			err := ValidateNoLostWrites(h)
			if !errors.Is(err, ErrLostAcknowledgedWrite) {
				t.Fatalf("ValidateNoLostWrites = %v", err)
			}
			t.Log(err)
		})
	}
}

// TestCheckDuplicateCAS: a conditional or unconditional set applied twice (a retried proposal
// that was not deduplicated).
func TestCheckDuplicateCAS(t *testing.T) {
	// The first application succeeded; the client was answered by the second, which failed the
	// version check. Nobody else wrote "b".
	answeredByRetry := history(
		op(0, 0, 10, create("/k", "a"), ok),
		op(0, 20, 30, set("/k", "b", 0), res(BadVersion)),
		op(1, 40, 50, sget("/k"), val("b", 1, 1, 2)),
	)
	mustCheck(t, answeredByRetry, false)
	// An unconditional set applied twice bumps the version by two.
	appliedTwice := history(
		op(0, 0, 10, create("/k", "a"), ok),
		op(0, 20, 30, set("/k", "b", AnyVersion), newVer(1, 1, 2)),
		op(1, 40, 50, sget("/k"), val("b", 2, 1, 3)),
	)
	mustCheck(t, appliedTwice, false)
	// A CAS acknowledged twice from the same version: two writers both won version 1.
	bothWon := history(
		op(0, 0, 10, create("/k", "a"), ok),
		op(0, 20, 30, set("/k", "b", 0), newVer(1, 1, 2)),
		op(1, 21, 31, set("/k", "c", 0), newVer(1, 1, 3)),
	)
	mustCheck(t, bothWon, false)
}

// TestCheckZxidOrder: zxids must follow the linearization: a later write may not get a smaller
// zxid, and a read must return the stat of the state it observes.
func TestCheckZxidOrder(t *testing.T) {
	mustCheck(t, history(
		op(0, 0, 10, create("/k", "a"), ok),
		op(0, 20, 30, set("/k", "b", 0), newVer(1, 5, 9)),
		op(0, 40, 50, set("/k", "c", 1), newVer(2, 5, 8)),
	), false)
	mustCheck(t, history(
		op(0, 0, 10, create("/k", "a"), ok),
		op(1, 20, 30, sget("/k"), val("a", 0, 5, 5)),
		op(2, 40, 50, sget("/k"), val("a", 0, 5, 6)),
	), false)
	// Recreated node: its czxid is above everything before the delete.
	mustCheck(t, history(
		op(0, 0, 10, create("/k", "a"), ok),
		op(0, 20, 30, set("/k", "b", 0), newVer(1, 5, 9)),
		op(0, 40, 50, del("/k", 1), ok),
		op(0, 60, 70, create("/k", "c"), ok),
		op(1, 80, 90, sget("/k"), val("c", 0, 7, 7)),
	), false)
}

func TestValidateReadsNeverGoBack(t *testing.T) {
	good := history(
		op(0, 0, 10, create("/k", "a"), ok),
		op(1, 20, 30, get("/k"), val("a", 0, 5, 5)),
		op(0, 31, 35, set("/k", "b", 0), newVer(1, 5, 9)),
		op(1, 40, 50, get("/k"), val("b", 1, 5, 9)),
		op(2, 41, 51, get("/k"), val("a", 0, 5, 5)), // another session may lag
		op(0, 60, 70, del("/k", 1), ok),
		op(0, 71, 80, create("/k", "c"), ok),
		op(1, 90, 95, get("/k"), val("c", 0, 20, 20)), // version 0 again, but a newer incarnation
		op(0, 90, 95, get("/k"), val("c", 0, 20, 20)),
	)
	if err := ValidateReadsNeverGoBack(good); err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]History{
		"plainRead": append(good[:4:4],
			op(1, 60, 70, get("/k"), val("a", 0, 5, 5))),
		"ownWrite": append(good[:3:3], // session 1 (client 0) reads before its own set
			op(0, 40, 50, get("/k"), val("a", 0, 5, 5))),
		"oldIncarnation": append(good[:8:8],
			op(1, 100, 110, get("/k"), val("b", 1, 5, 9))),
	} {
		t.Run(name, func(t *testing.T) {
			err := ValidateReadsNeverGoBack(h)
			if !errors.Is(err, ErrReadWentBack) {
				t.Fatalf("ValidateReadsNeverGoBack = %v", err)
			}
			t.Log(err)
		})
	}
	// Unknown sessions are not compared.
	h := append(good[:4:4], op(1, 60, 70, get("/k"), val("a", 0, 5, 5)))
	h[4].Session = 0
	if err := ValidateReadsNeverGoBack(h); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNoLostWritesNeedsFinalReadAndUniqueData(t *testing.T) {
	noFinal := history(
		op(0, 0, 10, create("/k", "a"), ok),
		op(1, 5, 8, sget("/k"), res(NoNode)),
		op(0, 20, 30, set("/k", "b", 0), newVer(1, 1, 2)),
		op(0, 40, 0, set("/k", "c", 1), unknown),    // open: a final read need not follow it
		op(1, 50, 60, get("/k"), val("b", 1, 1, 2)), // plain: not a final read
	)
	if err := ValidateNoLostWrites(noFinal); !errors.Is(err, ErrNoFinalRead) {
		t.Fatalf("ValidateNoLostWrites = %v", err)
	}
	withFinal := append(noFinal, op(1, 70, 80, sget("/k"), val("c", 2, 1, 3)))
	if err := ValidateNoLostWrites(withFinal); err != nil {
		t.Fatal(err)
	}
	dup := append(withFinal, op(2, 90, 95, set("/k", "b", AnyVersion), unknown))
	if err := ValidateNoLostWrites(dup); !errors.Is(err, ErrAmbiguousHistory) {
		t.Fatalf("ValidateNoLostWrites = %v", err)
	}
}

func TestCheckInfoNamesVisualization(t *testing.T) {
	t.Setenv(VisualizationDirEnv, t.TempDir())
	_, info := Check(history(
		op(0, 0, 10, create("/k", "a"), ok),
		op(1, 20, 30, sget("/k"), res(NoNode)),
	), time.Second)
	if !strings.Contains(info.String(), info.Visualization) || info.Visualization == "" {
		t.Fatalf("info %q", info)
	}
	if !strings.Contains(info.Err().Error(), "visualization: ") {
		t.Fatalf("err %v", info.Err())
	}
}

// simulate generates a linearizable history: clients call operations at random times, each
// takes effect at a random point inside its interval, in that order, on a real znode map. Some
// writes lose their reply (unknown outcome, open return): of those, some took effect and some
// never did. Every key gets final synced reads.
func simulate(seed uint64, clients, keys, opsPerClient int) History {
	rng := rand.New(rand.NewPCG(seed, 1))
	type pending struct {
		op    Op
		lp    int64
		apply bool // for unknown outcomes: whether the write took effect
	}
	var all []pending
	for c := range clients {
		t := int64(rng.IntN(10))
		for i := range opsPerClient {
			call := t
			lp := call + 1 + int64(rng.IntN(20))
			ret := lp + 1 + int64(rng.IntN(20))
			t = ret + 1 + int64(rng.IntN(5))
			path := fmt.Sprintf("/k%d", rng.IntN(keys))
			var in Input
			switch r := rng.IntN(10); {
			case r < 3:
				in = Input{Kind: Get, Path: path, Synced: rng.IntN(2) == 0}
			case r < 6:
				in = Input{Kind: Set, Path: path, Data: fmt.Sprintf("c%d-%d", c, i), Version: int32(rng.IntN(4)) - 1}
			case r < 8:
				in = Input{Kind: Create, Path: path, Data: fmt.Sprintf("c%d-%d", c, i)}
			default:
				in = Input{Kind: Delete, Path: path, Version: int32(rng.IntN(3)) - 1}
			}
			p := pending{op: Op{Client: c, Session: int64(c + 1), Input: in, Call: call, Return: ret}, lp: lp}
			if in.Kind != Get && rng.IntN(15) == 0 {
				p.op.Output.Result, p.op.Return = Unknown, Open
				p.apply = rng.IntN(2) == 0
				p.lp += int64(rng.IntN(200)) // a lost write may take effect much later
			}
			all = append(all, p)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].lp < all[j].lp })
	type node struct {
		data         string
		version      int32
		czxid, mzxid int64
	}
	state := map[string]*node{}
	var zxid int64 = 100
	var h History
	for _, p := range all {
		in, n := p.op.Input, state[p.op.Input.Path]
		unknownOutcome := p.op.Output.Result == Unknown
		if unknownOutcome && !p.apply {
			h = append(h, p.op)
			continue
		}
		var out Output
		versionOK := n != nil && (in.Version == AnyVersion || in.Version == n.version)
		switch {
		case in.Kind == Get && n == nil, in.Kind != Create && in.Kind != Get && n == nil:
			out.Result = NoNode
		case in.Kind == Get:
			out = val(n.data, n.version, n.czxid, n.mzxid)
		case in.Kind == Create && n != nil:
			out.Result = NodeExists
		case in.Kind == Create:
			zxid++
			state[in.Path] = &node{data: in.Data, czxid: zxid, mzxid: zxid}
			out.Result = OK
		case !versionOK:
			out.Result = BadVersion
		case in.Kind == Set:
			zxid++
			n.data, n.version, n.mzxid = in.Data, n.version+1, zxid
			out = newVer(n.version, n.czxid, n.mzxid)
		case in.Kind == Delete:
			delete(state, in.Path)
			out.Result = OK
		}
		if !unknownOutcome {
			p.op.Output = out
		}
		h = append(h, p.op)
	}
	var end int64
	for _, op := range h {
		if op.Return != Open {
			end = max(end, op.Return)
		}
	}
	for k := range keys {
		path := fmt.Sprintf("/k%d", k)
		out := res(NoNode)
		if n := state[path]; n != nil {
			out = val(n.data, n.version, n.czxid, n.mzxid)
		}
		h = append(h, Op{Client: clients, Session: int64(clients + 1), Input: sget(path), Output: out, Call: end + 10, Return: end + 20})
	}
	sort.SliceStable(h, func(i, j int) bool { return h[i].Call < h[j].Call })
	return h
}

// TestCheckAcceptsSimulatedHistories: generated linearizable histories with unknown outcomes
// resolved both ways pass the check and the validators.
func TestCheckAcceptsSimulatedHistories(t *testing.T) {
	for seed := range uint64(20) {
		h := simulate(seed, 6, 4, 300)
		if ok, info := Check(h, time.Minute); !ok {
			t.Fatalf("seed %d: %s", seed, info)
		}
		if err := Validate(h); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestCheckRejectsStaleReadInSimulatedHistory: in a generated history, make one synced read
// return what an earlier read saw before an acknowledged set was even called; the check and
// ValidateNoLostWrites must reject it.
func TestCheckRejectsStaleReadInSimulatedHistory(t *testing.T) {
	t.Setenv(VisualizationDirEnv, t.TempDir())
	mutated := 0
	for seed := range uint64(20) {
		h := simulate(seed, 6, 4, 300)
		i, j := staleCandidate(h)
		if i < 0 {
			continue
		}
		h[j].Output = h[i].Output
		mutated++
		if ok, info := Check(h, time.Minute); ok {
			t.Fatalf("seed %d: stale %v accepted (%s)", seed, h[j], info)
		}
		if err := ValidateNoLostWrites(h); !errors.Is(err, ErrLostAcknowledgedWrite) {
			t.Fatalf("seed %d: ValidateNoLostWrites = %v", seed, err)
		}
	}
	if mutated < 10 {
		t.Fatalf("only %d histories mutated", mutated)
	}
}

// staleCandidate finds reads i and j of one path with an acknowledged set w in between
// (i returned before w was called, w returned before j was called), i having read data.
func staleCandidate(h History) (int, int) {
	for i, r := range h {
		if r.Input.Kind != Get || r.Output.Result != OK {
			continue
		}
		for _, w := range h {
			if w.Input.Kind != Set || w.Output.Result != OK || w.Input.Path != r.Input.Path || w.Call <= r.Return {
				continue
			}
			for j, r2 := range h {
				if r2.Input.Synced && r2.Input.Path == r.Input.Path && r2.Output.Result == OK && r2.Call > w.Return {
					return i, j
				}
			}
		}
	}
	return -1, -1
}

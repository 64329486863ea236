package replica

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/cockroachdb/pebble"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// recorder is a Listener that keeps every call.
type recorder struct {
	mu    sync.Mutex
	calls []recorded
}

type recorded struct {
	v      *shard.View
	events []shard.Event
}

func (r *recorder) Applied(shardID uint64, v *shard.View, events []shard.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, recorded{v, events})
}

func (r *recorder) last() recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[len(r.calls)-1]
}

var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

func testConfig(dir string, l Listener) Config {
	return Config{ShardID: 3, Tag: 5, OwnsRoot: true, Root: "/", Dir: dir, ExtendedTypes: true, Listener: l, Logger: quiet}
}

func openMachine(t *testing.T, cfg Config) (*Machine, uint64) {
	t.Helper()
	m := NewMachine(cfg)
	idx, err := m.Open(make(chan struct{}))
	if err != nil {
		t.Fatal(err)
	}
	return m, idx
}

// entries encodes batches as consecutive Raft entries starting at index.
func entries(index uint64, bs ...*shard.Batch) []sm.Entry {
	out := make([]sm.Entry, len(bs))
	for i, b := range bs {
		out[i] = sm.Entry{Index: index + uint64(i), Cmd: b.AppendTo(nil)}
	}
	return out
}

func update(t *testing.T, m *Machine, ents []sm.Entry) []shard.BatchResult {
	t.Helper()
	out, err := m.Update(ents)
	if err != nil {
		t.Fatal(err)
	}
	res := make([]shard.BatchResult, len(out))
	for i, e := range out {
		r, err := shard.DecodeBatchResult(e.Result.Data)
		if err != nil {
			t.Fatal(err)
		}
		if e.Result.Value != uint64(r.Status) {
			t.Fatalf("Result.Value %d, status %d", e.Result.Value, r.Status)
		}
		res[i] = r
	}
	return res
}

func canonical(m *Machine) []byte { return m.state.AppendCanonical(nil) }

// saveSnapshot takes a snapshot of m's current state and returns the stream.
func saveSnapshot(t *testing.T, m *Machine) []byte {
	t.Helper()
	ctx, err := m.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.SaveSnapshot(ctx, &buf, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// workload applies a mix of writes through the machine, starting at Raft index idx and
// proposer seq seq.
func workload(t *testing.T, m *Machine, idx, seq uint64, time int64) {
	t.Helper()
	eph := opCreate("/app/e-", []byte("x"), wire.FlagEphemeralSequential)
	eph.Session = 0x77
	cont := shard.Op{Code: wire.OpCreateContainer, Body: encode(&wire.CreateRequest{Path: "/c", ACL: wire.OpenACLUnsafe})}
	res := update(t, m, entries(idx,
		batch(9, seq, time, opCreate("/app", []byte{}, 0), eph, cont, opCreate("/c/k", nil, 0)),
		batch(9, seq+1, time+1, opSet("/app", []byte("v1"), 0), opDelete("/c/k", -1), opCreate("/app", nil, 0)),
		batch(9, seq+1, time+1), // a retry
		batch(10, 1, time+2, shard.Op{Code: wire.OpCloseSession, Session: 0x66}, ownerOp(0x77, 42)),
	))
	if res[0].Status != shard.BatchApplied || res[2].Status != shard.BatchDuplicate || !reflect.DeepEqual(res[1].Results, res[2].Results) {
		t.Fatalf("workload results: %+v", res)
	}
}

func TestMachineReopen(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	m, idx := openMachine(t, testConfig(dir, rec))
	if idx != 0 {
		t.Fatalf("fresh machine at index %d", idx)
	}
	if len(rec.calls) != 1 || rec.calls[0].events != nil || rec.calls[0].v.Len() != 4 {
		t.Fatalf("Open must publish the initial view once: %+v", rec.calls)
	}
	workload(t, m, 1, 1, 1_000)
	last := rec.last()
	if last.v != m.View() || len(last.events) == 0 || last.v.Zxid() != m.state.LastZxid() {
		t.Fatalf("Update must publish its view and events")
	}
	if v, _ := m.Lookup(nil); v != m.View() {
		t.Fatal("Lookup must return the current view")
	}
	before := canonical(m)
	zxid := m.state.LastZxid()
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := m.Lookup(nil); err != nil || v == nil {
		t.Fatal("Lookup after Close must still answer")
	}

	m2, idx := openMachine(t, testConfig(dir, nil))
	defer m2.Close()
	if idx != 4 {
		t.Fatalf("reopened at index %d, want 4", idx)
	}
	if !bytes.Equal(canonical(m2), before) {
		t.Fatal("state differs after reopen")
	}
	n, ok := m2.View().Get("/app")
	if !ok || string(n.Data()) != "v1" || m2.View().Zxid() != zxid {
		t.Fatalf("view after reopen: %v %q", ok, n.Data())
	}
	if got := m2.View().Ephemerals(0x77, ""); len(got) != 1 {
		t.Fatalf("ephemeral index not rebuilt: %q", got)
	}
	if got := m2.View().ExpiryCandidates(1<<40, 10); !reflect.DeepEqual(got, []string{"/c"}) {
		t.Fatalf("expiry index not rebuilt: %q", got)
	}
	// the session owner record survives the restart
	if r := update(t, m2, entries(5, batch(11, 1, 0, epochOp(opSet("/app", nil, -1), 0x77, 41)))); r[0].Results[0].Err != wire.ErrSessionMoved {
		t.Fatalf("stale write after reopen: %v", r[0].Results[0].Err)
	}
	// exactly-once survives the restart: the retry of seq 2 gets the cached results
	res := update(t, m2, entries(6, batch(9, 2, 0), batch(9, 3, 0, opCreate("/after", nil, 0))))
	if res[0].Status != shard.BatchDuplicate || res[1].Status != shard.BatchApplied {
		t.Fatalf("after reopen: %+v", res)
	}
	if res[1].Results[0].Zxid <= zxid {
		t.Fatalf("zxid went back after reopen: %x <= %x", res[1].Results[0].Zxid, zxid)
	}
	// index regression is refused
	if _, err := m2.Update(entries(7, batch(9, 4, 0))); !errors.Is(err, ErrIndexRegressed) {
		t.Fatalf("regressed index: %v", err)
	}
}

func TestMachineSnapshot(t *testing.T) {
	rec := &recorder{}
	m, _ := openMachine(t, testConfig(t.TempDir(), rec))
	defer m.Close()
	workload(t, m, 1, 1, 1_000)
	ctx, err := m.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := canonical(m)
	// Updates after PrepareSnapshot are not in the snapshot.
	update(t, m, entries(5, batch(9, 3, 2_000, opCreate("/later", nil, 0))))
	var buf bytes.Buffer
	if err := m.SaveSnapshot(ctx, &buf, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	snap := buf.Bytes()

	// a second save of the same state is byte-identical
	ctx2, _ := m.PrepareSnapshot()
	var buf2 bytes.Buffer
	if err := m.SaveSnapshot(ctx2, &buf2, nil); err != nil {
		t.Fatal(err)
	}
	ctx3, _ := m.PrepareSnapshot()
	var buf3 bytes.Buffer
	m.SaveSnapshot(ctx3, &buf3, nil)
	if !bytes.Equal(buf2.Bytes(), buf3.Bytes()) {
		t.Fatal("snapshot stream not deterministic")
	}

	// recover into a fresh replica
	dir := t.TempDir()
	rec2 := &recorder{}
	r, _ := openMachine(t, testConfig(dir, rec2))
	update(t, r, entries(1, batch(4, 1, 0, opCreate("/junk", nil, 0)))) // replaced by the snapshot
	if err := r.RecoverFromSnapshot(bytes.NewReader(snap), make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(canonical(r), want) {
		t.Fatal("recovered state differs")
	}
	if r.applied != 4 || rec2.last().v != r.View() || rec2.last().events != nil {
		t.Fatalf("recover: applied %d, published %v", r.applied, rec2.last().v == r.View())
	}
	if _, ok := r.View().Get("/junk"); ok {
		t.Fatal("state from before the snapshot survived")
	}
	// both replicas apply the next entries identically
	next := entries(5, batch(9, 3, 2_000, opCreate("/later", nil, 0)))
	res := update(t, r, next)
	if res[0].Status != shard.BatchApplied || !bytes.Equal(canonical(r), canonical(m)) {
		t.Fatal("replicas diverge after recovery")
	}
	// the recovered replica reopens from the new DB generation
	r.Close()
	if _, err := os.Stat(filepath.Join(dir, "db-1")); !os.IsNotExist(err) {
		t.Fatal("old DB directory not removed")
	}
	r2, idx := openMachine(t, testConfig(dir, nil))
	defer r2.Close()
	if idx != 5 || !bytes.Equal(canonical(r2), canonical(m)) {
		t.Fatalf("reopen after recovery: index %d", idx)
	}
}

func TestMachineRecoverCorrupt(t *testing.T) {
	m, _ := openMachine(t, testConfig(t.TempDir(), nil))
	defer m.Close()
	workload(t, m, 1, 1, 1_000)
	ctx, _ := m.PrepareSnapshot()
	var buf bytes.Buffer
	if err := m.SaveSnapshot(ctx, &buf, nil); err != nil {
		t.Fatal(err)
	}
	r, _ := openMachine(t, testConfig(t.TempDir(), nil))
	defer r.Close()
	before := canonical(r)
	for _, mangle := range []func([]byte) []byte{
		func(b []byte) []byte { b[len(b)/2] ^= 1; return b },       // flipped bit: checksum
		func(b []byte) []byte { return b[:len(b)-10] },             // truncated
		func(b []byte) []byte { return append([]byte("x"), b...) }, // bad magic
	} {
		bad := mangle(append([]byte(nil), buf.Bytes()...))
		if err := r.RecoverFromSnapshot(bytes.NewReader(bad), nil); !errors.Is(err, shard.ErrCorruptStore) {
			t.Fatalf("corrupt snapshot: %v", err)
		}
		if !bytes.Equal(canonical(r), before) {
			t.Fatal("a failed recovery changed the state")
		}
	}
	stop := make(chan struct{})
	close(stop)
	ctx, _ = m.PrepareSnapshot()
	if err := m.SaveSnapshot(ctx, &bytes.Buffer{}, stop); err != nil && !errors.Is(err, sm.ErrSnapshotStopped) {
		t.Fatalf("stopped save: %v", err)
	}
	// the replica still works
	update(t, r, entries(1, batch(1, 1, 0, opCreate("/ok", nil, 0))))
}

func TestMachineMalformedEntry(t *testing.T) {
	m, _ := openMachine(t, testConfig(t.TempDir(), nil))
	defer m.Close()
	if _, err := m.Update([]sm.Entry{{Index: 1, Cmd: []byte{9, 9, 9}}}); !errors.Is(err, shard.ErrMalformedBatch) {
		t.Fatalf("malformed entry: %v", err)
	}
}

func TestMachineConfigMismatch(t *testing.T) {
	dir := t.TempDir()
	m, _ := openMachine(t, testConfig(dir, nil))
	m.Close()
	cfg := testConfig(dir, nil)
	cfg.Tag = 6
	if _, err := NewMachine(cfg).Open(nil); !errors.Is(err, shard.ErrConfigMismatch) {
		t.Fatalf("tag change: %v", err)
	}
}

func TestMachineEmptyShard(t *testing.T) {
	cfg := testConfig(t.TempDir(), nil)
	cfg.OwnsRoot, cfg.Root = false, "/sub"
	m, _ := openMachine(t, cfg)
	defer m.Close()
	if m.View().Len() != 0 {
		t.Fatal("a shard without the root must start empty")
	}
	res := update(t, m, entries(1, batch(1, 1, 0, opCreate("/sub", nil, 0))))
	if res[0].Results[0].Err != wire.ErrNoNode {
		t.Fatalf("create without a parent: %v", res[0].Results[0].Err)
	}
}

func TestCreateFunc(t *testing.T) {
	dir := t.TempDir()
	f := CreateFunc(func(shardID, replicaID uint64) Config {
		c := testConfig(filepath.Join(dir, "r"), nil)
		c.ShardID = shardID
		return c
	})
	sm := f(12, 1)
	if _, err := sm.Open(nil); err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	if sm.(*Machine).View().ShardID() != 12 {
		t.Fatal("shard id not passed through")
	}
}

// TestMachineCrashReopensAtLastSync: Update writes nothing to pebble; a crash (the store closed
// without Sync) reopens at the index of the last Sync, and replaying the entries after it (as
// dragonboat does from its log) gives the state the crashed replica had.
func TestMachineCrashReopensAtLastSync(t *testing.T) {
	dir := t.TempDir()
	m, _ := openMachine(t, testConfig(dir, nil))
	first := entries(1, batch(9, 1, 0, opCreate("/a", []byte("1"), 0)), batch(9, 2, 0, opCreate("/b", nil, 0)))
	update(t, m, first)
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	rest := entries(3, batch(9, 3, 0, opCreate("/c", nil, 0)), batch(9, 4, 0, opCreate("/d", nil, 0)))
	update(t, m, rest)
	want := canonical(m)
	// Crash: the pebble store goes away without a Sync or a Close of the machine.
	if err := m.db.Close(); err != nil {
		t.Fatal(err)
	}
	m2, idx := openMachine(t, testConfig(dir, nil))
	defer m2.Close()
	if idx != 2 {
		t.Fatalf("reopened at index %d, want 2 (the last Sync)", idx)
	}
	if _, ok := m2.View().Get("/c"); ok {
		t.Fatal("an unsynced change survived a crash of a WAL-less store?")
	}
	update(t, m2, entries(3, batch(9, 3, 0, opCreate("/c", nil, 0)), batch(9, 4, 0, opCreate("/d", nil, 0))))
	if !bytes.Equal(canonical(m2), want) {
		t.Fatal("replaying the log after the last Sync did not give the crashed replica's state")
	}
}

// TestSyncAskedForAtDirtyLimit: an Update that leaves SyncDirty changed znodes or more asks for
// a state sync once; it asks again only after syncRequestRetry without a Sync, and a Sync
// writes them and re-arms the request.
func TestSyncAskedForAtDirtyLimit(t *testing.T) {
	cfg := testConfig(t.TempDir(), nil)
	var asked int
	cfg.SyncDirty, cfg.RequestSync = 100, func() { asked++ }
	m, idx := openMachine(t, cfg)
	defer m.Close()
	create := func(from, n int) {
		t.Helper()
		var ops []shard.Op
		for i := from; i < from+n; i++ {
			ops = append(ops, opCreate(fmt.Sprintf("/n%d", i), nil, 0))
		}
		idx++
		if _, err := m.Update([]sm.Entry{{Index: idx, Cmd: batch(1, idx, 0, ops...).AppendTo(nil)}}); err != nil {
			t.Fatal(err)
		}
	}
	create(0, 60) // 60 dirty (and the root's child count): below the limit
	if asked != 0 {
		t.Fatalf("asked %d times below the limit", asked)
	}
	create(60, 60)
	create(120, 60)
	if asked != 1 {
		t.Fatalf("asked %d times after crossing the limit, want 1 (no repeat within %v)", asked, syncRequestRetry)
	}
	m.syncAsked = time.Now().Add(-syncRequestRetry) // the request went unanswered that long
	create(180, 1)
	if asked != 2 {
		t.Fatalf("asked %d times after %v without a Sync, want 2", asked, syncRequestRetry)
	}
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := pendingNodes(m.state); n != 0 {
		t.Fatalf("%d dirty znodes after Sync", n)
	}
	create(200, 90)
	if asked != 2 {
		t.Fatalf("asked again below the limit after a Sync (%d)", asked)
	}
	create(300, 20)
	if asked != 3 {
		t.Fatalf("asked %d times after a Sync and the limit crossed again, want 3", asked)
	}
}

// TestPresizedFlush: a flush large enough to be presized (presize) is written into the room it
// was given without growing, holds the same records as one left to grow, and a replica synced
// that way reopens with the same state.
func TestPresizedFlush(t *testing.T) {
	data := make([]byte, 1024)
	var ops []shard.Op
	for i := 0; i < 600; i++ {
		ops = append(ops, opCreate(fmt.Sprintf("/big%03d", i), data, 0))
	}
	cmd := batch(1, 1, 0, ops...).AppendTo(nil)
	loaded := func(dir string) *Machine {
		m, _ := openMachine(t, testConfig(dir, nil))
		if _, err := m.Update([]sm.Entry{{Index: 1, Cmd: cmd}}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	// The same changes written by two replicas (WriteChanges consumes them), one batch presized.
	m1, m2 := loaded(t.TempDir()), loaded(t.TempDir())
	defer m1.Close()
	defer m2.Close()
	est := m2.state.PendingBytes()
	if est < presizeMin {
		t.Fatalf("estimate %d below presizeMin %d: the test would not presize", est, presizeMin)
	}
	grown, sized := m1.db.NewBatch(), m2.db.NewBatch()
	defer grown.Close()
	defer sized.Close()
	presize(sized, est)
	room := cap(sized.Repr())
	if room < est {
		t.Fatalf("presized batch has room for %d bytes, the estimate is %d", room, est)
	}
	writeChanges(grown, m1.state, m1.applied)
	writeChanges(sized, m2.state, m2.applied)
	if c := cap(sized.Repr()); c != room {
		t.Fatalf("the presized batch grew from %d to %d bytes (%d written, estimate %d)", room, c, len(sized.Repr()), est)
	}
	if a, b := batchRecords(t, grown), batchRecords(t, sized); !reflect.DeepEqual(a, b) || len(a) < 600 {
		t.Fatalf("presized batch holds %d records, the grown one %d (equal: %v)", len(b), len(a), reflect.DeepEqual(a, b))
	}

	// Through Sync (flushDirty presizes), then reopened.
	dir := t.TempDir()
	m3 := loaded(dir)
	before := canonical(m3)
	if err := m3.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m3.Close(); err != nil {
		t.Fatal(err)
	}
	m4, idx := openMachine(t, testConfig(dir, nil))
	defer m4.Close()
	if idx != 1 || !bytes.Equal(canonical(m4), before) {
		t.Fatalf("reopened at %d, state equal: %v", idx, bytes.Equal(canonical(m4), before))
	}
}

// batchRecords returns a pebble batch's records as key -> kind and value.
func batchRecords(t *testing.T, b *pebble.Batch) map[string]string {
	t.Helper()
	out := map[string]string{}
	r := b.Reader()
	for {
		kind, k, v, ok := r.Next()
		if !ok {
			break
		}
		out[string(k)] = fmt.Sprint(kind) + ":" + string(v)
	}
	if len(out) != int(b.Count()) {
		t.Fatalf("batch of %d records read as %d", b.Count(), len(out))
	}
	return out
}

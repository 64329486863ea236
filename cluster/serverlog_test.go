package cluster

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
	"github.com/lni/vfs"
)

func openServerLog(t *testing.T, dir string) raftio.ILogDB {
	t.Helper()
	nhc := config.NodeHostConfig{NodeHostDir: dir, RTTMillisecond: 10, RaftAddress: "127.0.0.1:1",
		Expert: config.ExpertConfig{LogDB: config.GetSmallMemLogDBConfig(), FS: newLogFileFS(vfs.Default, slog.Default())}}
	if err := nhc.Prepare(); err != nil {
		t.Fatal(err)
	}
	db, err := serverLogFactory{}.Create(nhc, func(config.LogDBInfo) {}, []string{dir}, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestServerLogMapsShardIDs saves several replicas' entries, states and snapshots through the
// server log and reads each back with its own shard id, before and after a reopen; they all
// live in one log directory.
func TestServerLogMapsShardIDs(t *testing.T) {
	dir := t.TempDir()
	db := openServerLog(t, dir)
	shards := []uint64{1, 2, 3, 17}
	entries := func(s uint64) []pb.Entry {
		return []pb.Entry{{Index: 1, Term: 1, Cmd: []byte{byte(s), 1}}, {Index: 2, Term: 1, Cmd: []byte{byte(s), 2}}}
	}
	var updates []pb.Update
	for _, s := range shards {
		if err := db.SaveBootstrapInfo(s, 4, pb.Bootstrap{Addresses: map[uint64]string{4: "a"}}); err != nil {
			t.Fatal(err)
		}
		updates = append(updates, pb.Update{ShardID: s, ReplicaID: 4, EntriesToSave: entries(s),
			State: pb.State{Term: 1, Vote: 4, Commit: s % 3}})
	}
	if err := db.SaveRaftState(updates, 1); err != nil {
		t.Fatal(err)
	}
	if updates[1].ShardID != 2 {
		t.Fatalf("the caller's updates changed: shard %d", updates[1].ShardID)
	}
	if err := db.ImportSnapshot(pb.Snapshot{ShardID: 5, Index: 9, Term: 2}, 4); !errors.Is(err, errWholeLog) {
		t.Fatalf("ImportSnapshot: %v, want errWholeLog", err)
	}
	if err := db.RemoveNodeData(3, 4); !errors.Is(err, errWholeLog) {
		t.Fatalf("RemoveNodeData: %v, want errWholeLog", err)
	}
	if err := db.SaveSnapshots([]pb.Update{{ShardID: 2, ReplicaID: 4, Snapshot: pb.Snapshot{ShardID: 2, Index: 2, Term: 1, Filepath: "y"}}}); err != nil {
		t.Fatal(err)
	}
	check := func(db raftio.ILogDB) {
		t.Helper()
		for _, s := range shards {
			got, _, err := db.IterateEntries(nil, 0, s, 4, 1, 3, 1<<20)
			if err != nil || !reflect.DeepEqual(got, entries(s)) {
				t.Fatalf("shard %d: entries %v, %v", s, got, err)
			}
			rs, err := db.ReadRaftState(s, 4, 2)
			if err != nil || rs.State.Commit != s%3 || rs.State.Vote != 4 {
				t.Fatalf("shard %d: state %+v, %v", s, rs, err)
			}
			if _, err := db.GetBootstrapInfo(s, 4); err != nil {
				t.Fatalf("shard %d: bootstrap: %v", s, err)
			}
		}
		var ids []uint64
		infos, err := db.ListNodeInfo()
		if err != nil {
			t.Fatal(err)
		}
		for _, ni := range infos {
			ids = append(ids, ni.ShardID)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		if want := []uint64{1, 2, 3, 17}; !reflect.DeepEqual(ids, want) {
			t.Fatalf("ListNodeInfo: shards %v, want %v", ids, want)
		}
		for s, idx := range map[uint64]uint64{2: 2} {
			ss, err := db.GetSnapshot(s, 4)
			if err != nil || ss.ShardID != s || ss.Index != idx {
				t.Fatalf("snapshot of shard %d: %+v, %v", s, ss, err)
			}
		}
	}
	check(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openServerLog(t, dir)
	defer db.Close()
	check(db)
	logs, _ := filepath.Glob(filepath.Join(dir, "tandb", "*", "*.log"))
	dirs := map[string]bool{}
	for _, l := range logs {
		dirs[filepath.Dir(l)] = true
	}
	if len(dirs) != 1 {
		t.Fatalf("log files in %d directories, want 1: %v", len(dirs), logs)
	}
}

// fakeInner is a log store that records the batches it is asked to save; the first save waits
// for release.
type fakeInner struct {
	raftio.ILogDB
	mu      sync.Mutex
	batches [][]pb.Update
	entered chan struct{}
	release chan struct{}
	errAt   int // the save (1-based) that fails
}

func (f *fakeInner) SaveRaftState(us []pb.Update, _ uint64) error {
	f.mu.Lock()
	f.batches = append(f.batches, append([]pb.Update(nil), us...))
	n := len(f.batches)
	f.mu.Unlock()
	if n == 1 {
		close(f.entered)
		<-f.release
	}
	if n == f.errAt {
		return errors.New("disk failed")
	}
	return nil
}

// TestServerLogGroupsConcurrentSaves: saves that arrive while one is running go together in
// the next one, with mapped shard ids, and each caller gets its own save's outcome.
func TestServerLogGroupsConcurrentSaves(t *testing.T) {
	inner := &fakeInner{entered: make(chan struct{}), release: make(chan struct{}), errAt: 2}
	l := newServerLog(inner)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	save := func(i int, shard uint64) {
		defer wg.Done()
		errs[i] = l.SaveRaftState([]pb.Update{{ShardID: shard, ReplicaID: 1}}, uint64(i+1))
	}
	wg.Add(1)
	go save(0, 1)
	<-inner.entered
	wg.Add(2)
	go save(1, 2)
	go save(2, 3)
	for deadline := time.Now().Add(5 * time.Second); ; {
		l.mu.Lock()
		n := len(l.waiting)
		l.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d saves queued, want 2", n)
		}
		time.Sleep(time.Millisecond)
	}
	close(inner.release)
	wg.Wait()
	var got [][]uint64
	for _, b := range inner.batches {
		var ids []uint64
		for _, u := range b {
			ids = append(ids, u.ShardID)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		got = append(got, ids)
	}
	if want := [][]uint64{{1 << 4}, {2 << 4, 3 << 4}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("inner saves %v, want %v", got, want)
	}
	if errs[0] != nil || errs[1] == nil || errs[2] == nil {
		t.Fatalf("errors %v: want the first save's nil and the second's failure for both of its callers", errs)
	}
}

// TestLogStoreForExistingDirectory: a NodeHost directory written with a log per replica keeps
// tan's layout, a new one gets the server log, and tan alone (a binary without the server log)
// refuses a directory written with it.
func TestLogStoreForExistingDirectory(t *testing.T) {
	start := func(dir string, f config.LogDBFactory) (*dragonboat.NodeHost, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return dragonboat.NewNodeHost(config.NodeHostConfig{NodeHostDir: dir, RTTMillisecond: 10, RaftAddress: addr,
			Expert: config.ExpertConfig{LogDB: logDBConfig(), LogDBFactory: f, FS: newLogFileFS(vfs.Default, slog.Default())}})
	}
	QuietDragonboat()
	legacy, fresh := t.TempDir(), t.TempDir()
	if f, err := logStoreFor(fresh); err != nil || f.Name() != serverLogName {
		t.Fatalf("new directory: %v, %v", f, err)
	}
	for dir, f := range map[string]config.LogDBFactory{legacy: tan.Factory, fresh: serverLogFactory{}} {
		nh, err := start(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		nh.Close()
	}
	if f, err := logStoreFor(legacy); err != nil || f.Name() != tan.Factory.Name() {
		t.Fatalf("directory with a log per replica: %v, %v", f, err)
	}
	if f, err := logStoreFor(fresh); err != nil || f.Name() != serverLogName {
		t.Fatalf("directory with the server log: %v, %v", f, err)
	}
	if nh, err := start(fresh, tan.Factory); err == nil {
		nh.Close()
		t.Fatal("tan opened a directory written with the server log")
	}
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, dragonboatFlagFile), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := logStoreFor(broken); err == nil {
		t.Fatalf("unreadable settings file: %v chosen", f)
	}
}

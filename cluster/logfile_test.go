package cluster

import (
	"bytes"
	"io/fs"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
	"github.com/lni/vfs"
)

// TestLogFileFSKeepsTheLog writes a replica's log through tan on logFileFS and reads it back
// from two images of the directory: one copied while the store is open (what a crash leaves: the
// log file at its allocated size, a zero tail after the records) and the directory after an
// orderly close (the file cut back to its records). Both must give back every entry and the
// last State; the open file must be allocated (else the test checks nothing new) and the closed
// one no larger than its records.
func TestLogFileFSKeepsTheLog(t *testing.T) {
	dir := t.TempDir()
	open := func(dir string) raftio.ILogDB {
		t.Helper()
		nhc := config.NodeHostConfig{NodeHostDir: dir, RTTMillisecond: 10, RaftAddress: "127.0.0.1:1",
			Expert: config.ExpertConfig{LogDB: config.GetSmallMemLogDBConfig(), FS: newLogFileFS(vfs.Default, slog.Default())}}
		if err := nhc.Prepare(); err != nil {
			t.Fatal(err)
		}
		store, err := tan.Factory.Create(nhc, func(config.LogDBInfo) {}, []string{dir}, []string{dir})
		if err != nil {
			t.Fatal(err)
		}
		return store
	}
	const shard, replica, n = 3, 1, 300
	store := open(dir)
	rng := rand.New(rand.NewSource(3))
	var want []pb.Entry
	var state pb.State
	for i := uint64(1); i <= n; i++ {
		cmd := make([]byte, rng.Intn(2000))
		rng.Read(cmd)
		e := pb.Entry{Index: i, Term: 2, Cmd: cmd}
		want = append(want, e)
		state = pb.State{Term: 2, Vote: 1, Commit: i - 1}
		u := pb.Update{ShardID: shard, ReplicaID: replica, State: state, EntriesToSave: []pb.Entry{e}}
		if err := store.SaveRaftState([]pb.Update{u}, 1); err != nil {
			t.Fatal(err)
		}
	}
	logs := func(dir string) []string {
		var out []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && logFileName.MatchString(d.Name()) {
				out = append(out, p)
			}
			return nil
		})
		if len(out) == 0 {
			t.Fatalf("no tan log file under %s", dir)
		}
		return out
	}
	// Read to the last entry while the file is being written: the reader must stop at the last
	// record, not report the allocated tail's zeros as a torn record (a leader reads a lagging
	// follower's entries this way).
	for _, low := range []uint64{1, n - 5, n} {
		got, _, err := store.IterateEntries(nil, 0, shard, replica, low, n+1, 1<<30)
		if err != nil {
			t.Fatalf("open store: entries [%d, %d]: %v", low, n, err)
		}
		if len(got) != int(n-low+1) {
			t.Fatalf("open store: entries [%d, %d]: read %d", low, n, len(got))
		}
	}
	for _, p := range logs(dir) {
		if st, err := os.Stat(p); err != nil || st.Size() < logFileAlloc {
			t.Fatalf("open log file %s: size %v (err %v), want it allocated to %d", p, st.Size(), err, logFileAlloc)
		}
	}
	crash := filepath.Join(t.TempDir(), "crash")
	if err := os.CopyFS(crash, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range logs(dir) {
		st, err := os.Stat(p)
		if err != nil || st.Size() == 0 || st.Size() >= logFileAlloc {
			t.Fatalf("closed log file %s: size %d (err %v), want it cut back to its records", p, st.Size(), err)
		}
	}
	for _, d := range []string{dir, crash} {
		store := open(d)
		rs, err := store.ReadRaftState(shard, replica, 0)
		if err != nil {
			store.Close()
			t.Fatalf("%s: %v", d, err)
		}
		if rs.State != state || rs.FirstIndex != 1 || rs.EntryCount != n {
			t.Errorf("%s: raft state %+v, want %+v, first index 1, %d entries", d, rs, state, n)
		}
		got, _, err := store.IterateEntries(nil, 0, shard, replica, 1, n+1, 1<<30)
		store.Close()
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if len(got) != n {
			t.Fatalf("%s: read %d entries, want %d", d, len(got), n)
		}
		for i := range got {
			if got[i].Index != want[i].Index || got[i].Term != want[i].Term || !bytes.Equal(got[i].Cmd, want[i].Cmd) {
				t.Fatalf("%s: entry %d differs", d, i+1)
			}
		}
	}
}

// TestLogFileSyncedBeforeClose: closing a log file (tan does when it starts the next one, in the
// middle of a save) syncs what was written to it first, on both paths: the preallocated file and
// a file tan writes its own way. Without it a save of several replicas' updates could report
// durable an update left unsynced in the file it closed (serverlog.go).
func TestLogFileSyncedBeforeClose(t *testing.T) {
	fsys := newLogFileFS(vfs.Default, slog.Default())
	var synced []int
	fsys.sync = func(fd int) error {
		synced = append(synced, fd)
		return fdatasync(fd)
	}
	f, err := fsys.Create(filepath.Join(t.TempDir(), "000001.log"))
	if err != nil {
		t.Fatal(err)
	}
	lf, ok := f.(*logFile)
	if !ok {
		t.Skipf("log file not preallocated here (%T)", f)
	}
	fd := int(lf.osf.Fd())
	if _, err := f.Write([]byte("record")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != fd {
		t.Fatalf("syncs before close: %v, want one of fd %d", synced, fd)
	}

	var plainSyncs int
	plain := syncedOnClose{File: countingFile{File: mustCreate(t), syncs: &plainSyncs}}
	if err := plain.Close(); err != nil || plainSyncs != 1 {
		t.Fatalf("unallocated file: close %v after %d syncs, want 1", err, plainSyncs)
	}
}

type countingFile struct {
	vfs.File
	syncs *int
}

func (f countingFile) Sync() error { *f.syncs++; return f.File.Sync() }

func mustCreate(t *testing.T) vfs.File {
	t.Helper()
	f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "000002.log"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

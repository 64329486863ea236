package cluster

import (
	"bytes"
	"fmt"
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

// TestTornWriteAtLogEnd makes the crash image of a log store whose last write was cut short (a
// SIGKILL during a write leaves a prefix of it, ending at a page boundary) and opens it. tan
// alone must refuse it (else the test checks nothing); through tornTailFactory it must open with
// every entry but the unfinished last one. The tear is put in the last chunk's payload and in
// its header. A broken chunk with data after it is not a torn write and must be left alone.
func TestTornWriteAtLogEnd(t *testing.T) {
	const shard, replica, n = 3, 1, 200
	open := func(dir string, factory config.LogDBFactory) (store raftio.ILogDB, err error) {
		t.Helper()
		nhc := config.NodeHostConfig{NodeHostDir: dir, RTTMillisecond: 10, RaftAddress: "127.0.0.1:1",
			Expert: config.ExpertConfig{LogDB: config.GetSmallMemLogDBConfig(), FS: newLogFileFS(vfs.Default, slog.Default())}}
		if err := nhc.Prepare(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return factory.Create(nhc, func(config.LogDBInfo) {}, []string{dir}, []string{dir})
	}
	dir := t.TempDir()
	store, err := open(dir, tan.Factory)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(5))
	var want []pb.Entry
	for i := uint64(1); i <= n; i++ {
		cmd := make([]byte, 100+rng.Intn(3000))
		rng.Read(cmd)
		e := pb.Entry{Index: i, Term: 2, Cmd: cmd}
		want = append(want, e)
		u := pb.Update{ShardID: shard, ReplicaID: replica, State: pb.State{Term: 2, Vote: 1, Commit: i - 1},
			EntriesToSave: []pb.Entry{e}}
		if err := store.SaveRaftState([]pb.Update{u}, 1); err != nil {
			t.Fatal(err)
		}
	}
	image := filepath.Join(t.TempDir(), "image")
	if err := os.CopyFS(image, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	store.Close()

	// copyImage returns a fresh copy of the crash image and its allocated log file.
	copyImage := func(t *testing.T) (string, string) {
		d := filepath.Join(t.TempDir(), "crash")
		if err := os.CopyFS(d, os.DirFS(image)); err != nil {
			t.Fatal(err)
		}
		var logs []string
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && logFileName.MatchString(e.Name()) {
				if st, err := e.Info(); err == nil && st.Size() >= logFileAlloc {
					logs = append(logs, p)
				}
			}
			return nil
		})
		if len(logs) != 1 {
			t.Fatalf("allocated log files in the image: %v, want one", logs)
		}
		return d, logs[0]
	}
	// tear zeroes the last chunk of the log file from keep bytes after its start to its end.
	tear := func(t *testing.T, path string, keep func(payload int) int) logTail {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, _ := f.Stat()
		whole, err := scanLogTail(f, st.Size())
		if err != nil || whole.torn || whole.bad || whole.last < 0 {
			t.Fatalf("scan of the untouched image: %+v, %v", whole, err)
		}
		chunk := int(whole.end - whole.last)
		k := keep(chunk - chunkHeaderSize)
		if _, err := f.WriteAt(make([]byte, chunk-k), whole.last+int64(k)); err != nil {
			t.Fatal(err)
		}
		return whole
	}
	cases := []struct {
		name string
		keep func(payload int) int
	}{
		{"in the payload", func(payload int) int { return chunkHeaderSize + payload/2 }},
		{"in the header", func(int) int { return 3 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, path := copyImage(t)
			whole := tear(t, path, c.keep)
			plain := filepath.Join(t.TempDir(), "plain")
			if err := os.CopyFS(plain, os.DirFS(d)); err != nil {
				t.Fatal(err)
			}
			s, err := open(plain, tan.Factory)
			if err == nil {
				_, rerr := s.ReadRaftState(shard, replica, 0)
				s.Close()
				if rerr == nil {
					t.Fatal("tan opened the torn log without mending: the tear is not the one that fails")
				}
				t.Logf("without mending: %v", rerr)
			} else {
				t.Logf("without mending: %v", err)
			}
			s, err = open(d, tornTailFactory{inner: tan.Factory})
			if err != nil {
				t.Fatalf("open after mending: %v", err)
			}
			defer s.Close()
			rs, err := s.ReadRaftState(shard, replica, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rs.EntryCount != n-1 || rs.State.Commit != n-2 {
				t.Fatalf("raft state %+v, want %d entries and commit %d (all but the torn one)", rs, n-1, n-2)
			}
			got, _, err := s.IterateEntries(nil, 0, shard, replica, 1, n, 1<<30)
			if err != nil || len(got) != n-1 {
				t.Fatalf("read %d entries (%v), want %d", len(got), err, n-1)
			}
			for i := range got {
				if got[i].Index != want[i].Index || !bytes.Equal(got[i].Cmd, want[i].Cmd) {
					t.Fatalf("entry %d differs", i+1)
				}
			}
			// The mended file reads as a clean end at the torn chunk.
			f, _ := os.Open(path)
			st, _ := f.Stat()
			after, err := scanLogTail(f, st.Size())
			f.Close()
			if err != nil || after.torn || after.bad || after.end != whole.last {
				t.Fatalf("mended file: %+v (%v), want its data to end at %d", after, err, whole.last)
			}
		})
	}
	t.Run("data after the broken chunk", func(t *testing.T) {
		_, path := copyImage(t)
		whole := tear(t, path, cases[0].keep)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte{1}, whole.end+chunkBlockSize); err != nil {
			t.Fatal(err)
		}
		f.Close()
		before, _ := os.ReadFile(path)
		changed, err := mendTornTail(path, slog.Default())
		if err != nil || changed {
			t.Fatalf("mend: changed %v, err %v; want the file left alone", changed, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatal("the file changed")
		}
	})
}

package zkdata

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/wire"
)

// These tests build trees in a real Apache ZooKeeper 3.8, read every znode back through a
// client (the truth), and compare the package's reading of the data directory with it.

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// startZooKeeper starts a standalone ZooKeeper that takes a snapshot every 11 to 20
// transactions and preallocates 1 MiB log files, with TTL nodes enabled and the container
// reaper idle.
func startZooKeeper(t *testing.T, flags ...string) (*apachezk.Ensemble, string) {
	t.Helper()
	if err := apachezk.Available(); err != nil {
		t.Skipf("Apache ZooKeeper is needed: %v", err)
	}
	if testing.Short() {
		t.Skip("starts Apache ZooKeeper")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e, err := apachezk.Start(ctx, apachezk.Options{
		Config:   map[string]string{"snapCount": "20", "preAllocSize": "1024"},
		JVMFlags: append([]string{apachezk.FlagExtendedTypes, apachezk.FlagNoContainerGC}, flags...),
		Dir:      t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, filepath.Join(e.ServerDir(0), "data")
}

func connect(t *testing.T, e *apachezk.Ensemble) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{e.Addr(0)}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatal("no session")
		}
	}
	t.Cleanup(c.Close)
	return c
}

// ok fails the test on an error and passes the value on: ok(t)(c.Set(...)).
func ok(t *testing.T) func(any, error) any {
	return func(v any, err error) any {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type truth struct {
	data []byte
	stat zk.Stat
	acl  []zk.ACL
}

// readTruth reads every znode through c.
func readTruth(t *testing.T, c *zk.Conn) map[string]truth {
	t.Helper()
	out := map[string]truth{}
	var visit func(p string)
	visit = func(p string) {
		data, st := must2(t, c.Get)(p)
		acl, _ := must2(t, c.GetACL)(p)
		out[p] = truth{data: data, stat: *st, acl: acl}
		kids, _ := must2(t, c.Children)(p)
		for _, k := range kids {
			visit(strings.TrimSuffix(p, "/") + "/" + k)
		}
	}
	visit("/")
	return out
}

func must2[A, B any](t *testing.T, f func(string) (A, B, error)) func(string) (A, B) {
	return func(p string) (A, B) {
		t.Helper()
		a, b, err := f(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return a, b
	}
}

func wireStat(s zk.Stat) wire.Stat {
	return wire.Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version,
		Cversion: s.Cversion, Aversion: s.Aversion, EphemeralOwner: s.EphemeralOwner,
		DataLength: s.DataLength, NumChildren: s.NumChildren, Pzxid: s.Pzxid}
}

// compareTree checks tree against the truth field by field.
func compareTree(t *testing.T, label string, tree *Tree, want map[string]truth) {
	t.Helper()
	seen := map[string]bool{}
	var problems []string
	err := tree.Walk(func(n *Node) error {
		seen[n.Path] = true
		w, ok := want[n.Path]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: not in ZooKeeper", n.Path))
			return nil
		}
		if (n.Data == nil) != (w.data == nil) || !bytes.Equal(n.Data, w.data) {
			problems = append(problems, fmt.Sprintf("%s: data %q (nil %v), ZooKeeper %q (nil %v)", n.Path, trunc(n.Data), n.Data == nil, trunc(w.data), w.data == nil))
		}
		if ws := wireStat(w.stat); n.Stat != ws {
			problems = append(problems, fmt.Sprintf("%s: stat\n  got  %+v\n  want %+v", n.Path, n.Stat, ws))
		}
		if len(n.ACL) != len(w.acl) {
			problems = append(problems, fmt.Sprintf("%s: ACL %v, ZooKeeper %v", n.Path, n.ACL, w.acl))
		} else {
			for i, a := range n.ACL {
				if b := w.acl[i]; a.Perms != b.Perms || a.ID.Scheme != b.Scheme || a.ID.ID != b.ID {
					problems = append(problems, fmt.Sprintf("%s: ACL %v, ZooKeeper %v", n.Path, n.ACL, w.acl))
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range want {
		if !seen[p] {
			problems = append(problems, fmt.Sprintf("%s: missing", p))
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Errorf("%s: %s", label, p)
	}
	if rep := tree.Report(); len(rep.DigestMismatches) > 0 || rep.DigestsChecked == 0 {
		t.Errorf("%s: %d digests checked, mismatches at %x", label, rep.DigestsChecked, rep.DigestMismatches)
	}
}

func trunc(b []byte) []byte {
	if len(b) > 20 {
		return b[:20]
	}
	return b
}

// newestSnapshot returns the zxid of the newest snapshot in dataDir.
func newestSnapshot(t *testing.T, dataDir string) int64 {
	snaps, _, err := listDir(filepath.Join(dataDir, versionDir))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no snapshot: %v", err)
	}
	return snaps[0].zxid
}

// settle writes to path until the newest snapshot is older than the last write, so that the
// log entries after it matter. A snapshot needs at least 11 transactions after the previous one
// with snapCount 20, so this takes one or two writes.
func settle(t *testing.T, c *zk.Conn, dataDir, path string) {
	for i := 0; ; i++ {
		st := ok(t)(c.Set(path, []byte(fmt.Sprint("settle ", i)), -1)).(*zk.Stat)
		time.Sleep(300 * time.Millisecond)
		if s := newestSnapshot(t, dataDir); s < st.Mzxid {
			return
		}
		if i == 5 {
			t.Fatal("the newest snapshot keeps up with the writes")
		}
	}
}

// copyDir copies the files of dataDir's version-2 into a new data directory.
func copyDir(t *testing.T, dataDir string) string {
	return cloneDir(t, dataDir, func(string) bool { return true }, false)
}

// cloneDir makes a new data directory with copies of, or hard links to, the files of dataDir's
// version-2 for which keep is true.
func cloneDir(t *testing.T, dataDir string, keep func(name string) bool, link bool) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dst, versionDir), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(dataDir, versionDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !keep(e.Name()) {
			continue
		}
		from, to := filepath.Join(dataDir, versionDir, e.Name()), filepath.Join(dst, versionDir, e.Name())
		if link {
			err = os.Link(from, to)
		} else {
			err = copyFile(from, to)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func TestZooKeeperDataDir(t *testing.T) {
	e, dataDir := startZooKeeper(t)
	a := connect(t, e)
	b := connect(t, e)
	if err := a.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	world := zk.WorldACL(zk.PermAll)
	alice := zk.DigestACL(zk.PermAll, "alice", "secret")
	mixed := append(zk.DigestACL(zk.PermAll, "alice", "secret"), zk.WorldACL(zk.PermRead)...)
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	big := make([]byte, 200<<10)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(rnd.Uint32())
	}
	create := func(c *zk.Conn, p string, data []byte, flags int32, acl []zk.ACL) string {
		t.Helper()
		return ok(t)(c.Create(p, data, flags, acl)).(string)
	}

	create(a, "/app", []byte("app"), 0, world)
	create(a, "/app/config", binary, 0, alice)
	create(a, "/app/config/empty", []byte{}, 0, world)
	create(a, "/app/config/null", nil, 0, world)
	create(a, "/app/big", big, 0, world)
	create(a, "/app/auth", []byte("auth"), 0, zk.AuthACL(zk.PermAll))
	if _, err := a.Create("/app", nil, 0, world); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create /app again: %v", err)
	}
	create(a, "/queue", nil, 0, world)
	var items []string
	for i := 0; i < 5; i++ {
		items = append(items, create(a, "/queue/item-", []byte(fmt.Sprint(i)), zk.FlagSequence, world))
	}
	noErr(t, a.Delete(items[2], -1))
	for i := 0; i < 3; i++ {
		ok(t)(a.Set("/app/config", append(binary, byte(i)), int32(i)))
	}
	ok(t)(a.SetACL("/app/config/empty", mixed, 0))
	ok(t)(a.SetACL("/app/config/empty", alice, 1))
	create(a, "/eph", nil, 0, world)
	create(a, "/eph/a-1", []byte("a"), zk.FlagEphemeral, world)
	create(a, "/eph/a-", nil, zk.FlagEphemeralSequential, world)
	create(b, "/eph/b-1", []byte("b"), zk.FlagEphemeral, world)
	create(b, "/eph/b-2", nil, zk.FlagEphemeral, world)
	ok(t)(a.CreateContainer("/container", []byte("c"), zk.FlagContainer, world))
	create(a, "/container/c1", nil, 0, world)
	create(a, "/container/c2", nil, 0, world)
	noErr(t, a.Delete("/container/c2", -1))
	ok(t)(a.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, world, time.Hour))
	create(a, "/tmp", nil, 0, world)
	create(a, "/tmp/x", nil, 0, world)
	create(a, "/tmp/x/y", nil, 0, world)
	noErr(t, a.Delete("/tmp/x/y", -1))
	noErr(t, a.Delete("/tmp/x", -1))
	ok(t)(a.Multi(
		&zk.CreateRequest{Path: "/multi", Data: []byte("m"), Acl: world},
		&zk.CreateRequest{Path: "/multi/m1", Acl: alice},
		&zk.SetDataRequest{Path: "/app", Data: []byte("app2"), Version: 0},
		&zk.DeleteRequest{Path: items[0], Version: -1},
		&zk.CheckVersionRequest{Path: "/queue", Version: 0},
	))
	if _, err := a.Multi(
		&zk.CreateRequest{Path: "/failed", Acl: world},
		&zk.CheckVersionRequest{Path: "/app", Version: 99},
	); err == nil {
		t.Fatal("the failing multi succeeded")
	}
	load(t, a, world)
	b.Close() // its ephemerals go with it
	create(a, "/tail", nil, 0, world)
	settle(t, a, dataDir, "/tail")

	want := readTruth(t, a)
	if _, ok := want["/failed"]; ok {
		t.Fatal("/failed exists")
	}
	live := copyDir(t, dataDir) // taken while ZooKeeper runs
	if err := e.Stop(0); err != nil {
		t.Fatal(err)
	}

	check := func(label, dir string) *Tree {
		tree, err := Open(dir, "")
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		compareTree(t, label, tree, want)
		rep := tree.Report()
		if rep.Snapshot.Zxid == 0 || rep.Txns == 0 {
			t.Errorf("%s: snapshot %#x and %d transactions after it: want both to matter", label, rep.Snapshot.Zxid, rep.Txns)
		}
		sessions := map[int64]bool{}
		for _, s := range tree.Sessions() {
			sessions[s.ID] = true
		}
		if !sessions[a.SessionID()] || sessions[b.SessionID()] {
			t.Errorf("%s: sessions %v: want %#x and not %#x", label, tree.Sessions(), a.SessionID(), b.SessionID())
		}
		kinds := map[string]Kind{"/eph/a-1": Ephemeral, "/container": Container, "/ttl": TTL, "/app": Persistent}
		for p, k := range kinds {
			n := tree.Get(p)
			if n == nil || n.Kind != k {
				t.Errorf("%s: %s: %+v, want kind %v", label, p, n, k)
			}
		}
		if n := tree.Get("/ttl"); n != nil && n.TTL != time.Hour.Milliseconds() {
			t.Errorf("%s: /ttl TTL %d", label, n.TTL)
		}
		if n := tree.Get("/eph/a-1"); n != nil && n.Stat.EphemeralOwner != a.SessionID() {
			t.Errorf("%s: /eph/a-1 owner %#x, want %#x", label, n.Stat.EphemeralOwner, a.SessionID())
		}
		t.Logf("%s: %s at %#x + %d txns from %d logs; %d digests checked; zxid %#x; warnings %q",
			label, filepath.Base(rep.Snapshot.Path), rep.Snapshot.Zxid, rep.Txns, len(rep.Logs), rep.DigestsChecked, tree.Zxid(), rep.Warnings)
		return tree
	}
	tree := check("stopped", dataDir)
	logs := tree.Report().Logs
	if last := logs[len(logs)-1]; last.Stop != "zero-filled tail" || last.NonZeroAfter != -1 {
		t.Errorf("last log: stopped at %d: %s (non-zero at %d), want the preallocated zeros", last.End, last.Stop, last.NonZeroAfter)
	}
	check("copied while running", live)

	t.Run("EverySnapshot", func(t *testing.T) { testEverySnapshot(t, dataDir, want) })
	t.Run("TruncatedSnapshot", func(t *testing.T) { testTruncatedSnapshot(t, dataDir, want) })
	t.Run("CorruptLog", func(t *testing.T) { testCorruptLog(t, dataDir, tree) })
	t.Run("TornTail", func(t *testing.T) { testTornTail(t, dataDir, tree) })
}

// load writes concurrently from four goroutines, so that ZooKeeper takes snapshots while it
// applies transactions (fuzzy snapshots, whose replay must tolerate what they already hold).
func load(t *testing.T, c *zk.Conn, acl []zk.ACL) {
	t.Helper()
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			errs <- func() error {
				base := fmt.Sprintf("/load%d", g)
				if _, err := c.Create(base, nil, 0, acl); err != nil {
					return err
				}
				for i := 0; i < 40; i++ {
					p := fmt.Sprintf("%s/n%d", base, i%7)
					var err error
					switch i % 4 {
					case 0, 1:
						_, err = c.Create(p, []byte(p), 0, acl)
						if errors.Is(err, zk.ErrNodeExists) {
							_, err = c.Set(p, []byte{byte(i)}, -1)
						}
					case 2:
						err = c.Delete(p, -1)
						if errors.Is(err, zk.ErrNoNode) {
							err = nil
						}
					case 3:
						_, err = c.Multi(&zk.CreateRequest{Path: p + "-m", Acl: acl}, &zk.DeleteRequest{Path: p + "-m", Version: -1},
							&zk.SetDataRequest{Path: base, Data: []byte{byte(i)}, Version: -1})
					}
					if err != nil {
						return fmt.Errorf("%s: %w", p, err)
					}
				}
				return nil
			}()
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// testEverySnapshot starts from each snapshot in turn (the newer ones removed), down to the
// empty snapshot.0 from which every transaction is replayed: each gives the same tree.
func testEverySnapshot(t *testing.T, dataDir string, want map[string]truth) {
	snaps, _, _ := listDir(filepath.Join(dataDir, versionDir))
	fuzzy := 0
	for _, s := range snaps {
		dir := cloneDir(t, dataDir, func(name string) bool {
			z, isSnap := zxidFromName(name, snapPrefix)
			return !isSnap || z <= s.zxid
		}, true)
		tree, err := Open(dir, "")
		if err != nil {
			t.Fatalf("from %s: %v", filepath.Base(s.path), err)
		}
		rep := tree.Report()
		if rep.Snapshot.Zxid != s.zxid {
			t.Fatalf("loaded %s, want %s", rep.Snapshot.Path, s.path)
		}
		if rep.Snapshot.DigestZxid > rep.Snapshot.Zxid {
			fuzzy++
		}
		compareTree(t, "from "+filepath.Base(s.path), tree, want)
		if s.zxid == 0 && rep.Txns != int(tree.Zxid()) {
			t.Errorf("from snapshot.0: %d transactions replayed up to zxid %#x", rep.Txns, tree.Zxid())
		}
	}
	t.Logf("%d snapshots, %d of them fuzzy", len(snaps), fuzzy)
}

// testTruncatedSnapshot cuts the newest snapshot short: Open falls back to the one before and
// replays more of the log, as ZooKeeper does; with no older snapshot it fails, naming the file.
func testTruncatedSnapshot(t *testing.T, dataDir string, want map[string]truth) {
	dir := copyDir(t, dataDir)
	snaps, _, _ := listDir(filepath.Join(dir, versionDir))
	newest := snaps[0]
	if err := os.Truncate(newest.path, newest.size-30); err != nil {
		t.Fatal(err)
	}
	tree, err := Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	rep := tree.Report()
	if len(rep.Skipped) != 1 || rep.Skipped[0].Path != newest.path || rep.Snapshot.Zxid != snaps[1].zxid {
		t.Errorf("skipped %v, loaded %s", rep.Skipped, rep.Snapshot.Path)
	}
	compareTree(t, "older snapshot", tree, want)

	// A flipped byte inside the newest snapshot: its checksum fails.
	dir = copyDir(t, dataDir)
	flip(t, filepath.Join(dir, versionDir, filepath.Base(newest.path)), newest.size/2)
	tree, err = Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep := tree.Report(); len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Err.Error(), filepath.Base(newest.path)) {
		t.Errorf("skipped %v", rep.Skipped)
	}
	compareTree(t, "older snapshot after a corrupt one", tree, want)

	// Only the truncated snapshot left.
	for _, s := range snaps[1:] {
		os.Remove(filepath.Join(dir, versionDir, filepath.Base(s.path)))
	}
	os.Truncate(filepath.Join(dir, versionDir, filepath.Base(newest.path)), newest.size-30)
	_, err = Open(dir, "")
	if err == nil || !strings.Contains(err.Error(), filepath.Base(newest.path)) || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("Open with only a truncated snapshot: %v", err)
	}
}

func flip(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	f.ReadAt(b[:], off)
	b[0] ^= 0x20
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

// entryOffsets lists the offsets and zxids of the entries in a log.
func entryOffsets(t *testing.T, path string) (offs, zxids []int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	lf := LogFile{Path: path}
	if err := readLog(f, st.Size(), &lf, func(off int64, e *entry) error {
		offs, zxids = append(offs, off), append(zxids, e.hdr.zxid)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return offs, zxids
}

// copyWithLog copies dataDir and returns the copy of one of the logs tree was read from: the
// last one, or the one with the most entries. It has at least one entry.
func copyWithLog(t *testing.T, dataDir string, tree *Tree, last bool) (dir, path string, offs, zxids []int64) {
	t.Helper()
	logs := tree.Report().Logs
	pick := len(logs) - 1
	for i, l := range logs {
		if !last && l.Entries > logs[pick].Entries {
			pick = i
		}
	}
	dir = copyDir(t, dataDir)
	path = filepath.Join(dir, versionDir, filepath.Base(logs[pick].Path))
	offs, zxids = entryOffsets(t, path)
	if len(offs) == 0 {
		t.Fatalf("%s has no entries", path)
	}
	return dir, path, offs, zxids
}

// testCorruptLog flips a byte inside an entry in the middle of a log: an error naming the log
// and the entry's offset.
func testCorruptLog(t *testing.T, dataDir string, tree *Tree) {
	dir, path, offs, _ := copyWithLog(t, dataDir, tree, false)
	at := offs[len(offs)/2]
	flip(t, path, at+12+20)
	_, err := Open(dir, "")
	var fe *FormatError
	if !errors.As(err, &fe) || fe.File != path || fe.Offset != at || !strings.Contains(fe.What, "checksum") {
		t.Fatalf("Open: %v; want a checksum error at %s offset %d", err, path, at)
	}
	t.Log(err)
}

// testTornTail cuts the last log inside its last entry: the replay ends quietly before it.
func testTornTail(t *testing.T, dataDir string, tree *Tree) {
	dir, path, offs, zxids := copyWithLog(t, dataDir, tree, true)
	lastOff, lastZxid := offs[len(offs)-1], zxids[len(zxids)-1]
	if err := os.Truncate(path, lastOff+20); err != nil {
		t.Fatal(err)
	}
	torn, err := Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	rep := torn.Report()
	last := rep.Logs[len(rep.Logs)-1]
	if torn.Zxid() != lastZxid-1 || last.End != lastOff || !strings.Contains(last.Stop, "cut short") {
		t.Errorf("zxid %#x, want %#x; last log stopped at %d (%s)", torn.Zxid(), lastZxid-1, last.End, last.Stop)
	}
	if len(rep.DigestMismatches) > 0 {
		t.Errorf("digest mismatches at %x", rep.DigestMismatches)
	}
}

// TestZooKeeperCompressedSnapshots reads snapshots ZooKeeper wrote gzip- and snappy-compressed.
func TestZooKeeperCompressedSnapshots(t *testing.T) {
	for _, method := range []string{"gz", "snappy"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			e, dataDir := startZooKeeper(t, "-Dzookeeper.snapshot.compression.method="+method)
			c := connect(t, e)
			world := zk.WorldACL(zk.PermAll)
			payload := bytes.Repeat([]byte("compressible "), 10000)
			ok(t)(c.Create("/c", nil, 0, world))
			for i := 0; i < 40; i++ {
				ok(t)(c.Create(fmt.Sprintf("/c/n%02d", i), payload[:i*1000], 0, world))
			}
			ok(t)(c.Create("/c/e", nil, zk.FlagEphemeral, world))
			settle(t, c, dataDir, "/c")
			want := readTruth(t, c)
			if err := e.Stop(0); err != nil {
				t.Fatal(err)
			}
			tree, err := Open(dataDir, "")
			if err != nil {
				t.Fatal(err)
			}
			if rep := tree.Report(); !strings.HasSuffix(rep.Snapshot.Path, "."+method) || rep.Snapshot.Zxid == 0 {
				t.Fatalf("loaded %s", rep.Snapshot.Path)
			}
			compareTree(t, method, tree, want)
		})
	}
}

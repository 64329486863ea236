package zkdata

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral/corral/wire"
)

// The decoders of the two file formats never panic, whatever the bytes. The seeds in
// testdata/fuzz are files a real ZooKeeper 3.8 wrote (a fresh snapshot.0, the start of a log)
// and the encodings of the tests (ZKDATA_WRITE_SEEDS=1 go test -run TestWriteFuzzSeeds
// writes those again).

func FuzzSnapshot(f *testing.F) {
	for _, s := range snapshotSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if tree, _, err := readSnapshot(bytes.NewReader(b), "fuzz", int64(len(b)), false, 1); err == nil {
			tree.killDeadSessions()
			tree.checkACLs()
			tree.Walk(func(*Node) error { return nil })
		}
		if r, err := newSnappyReader(bytes.NewReader(b), int64(len(b))); err == nil {
			readSnapshot(r, "fuzz", -1, true, 1)
		}
	})
}

func FuzzTxnLog(f *testing.F) {
	for _, s := range logSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tree := fuzzyBase()
		lf := LogFile{Path: "fuzz"}
		err := readLog(bytes.NewReader(b), int64(len(b)), &lf, func(off int64, e *entry) error {
			tree.apply(&e.hdr, &e.txn)
			return nil
		})
		if err == nil && (lf.End < 0 || lf.End > int64(len(b))) {
			t.Fatalf("stopped at %d of %d", lf.End, len(b))
		}
		tree.killDeadSessions()
		tree.Walk(func(*Node) error { return nil })
	})
}

func snapshotSeeds() [][]byte {
	plain := encodeSnapshot(fuzzyBase(), 4)
	return [][]byte{plain, encodeSnapshot(baseTree(), 0), snappyStream(plain, 100)}
}

func logSeeds() [][]byte {
	l := newLogWriter()
	d := int64(42)
	l.add(hdr(4, 0x10), &txn{typ: wire.OpCreate, path: "/a/y", data: []byte("y"), acl: alice, parentCVersion: 2}, &d)
	l.add(hdr(5, 0x10), &txn{typ: wire.OpMulti, subs: []txn{
		{typ: wire.OpCreate, path: "/m", data: []byte{}, parentCVersion: 4},
		{typ: wire.OpSetData, path: "/a", data: []byte("A"), version: 1},
		{typ: wire.OpCheck, path: "/a", version: 1},
		{typ: wire.OpDelete, path: "/a/y"},
		{typ: wire.OpCreateContainer, path: "/c", parentCVersion: 5},
		{typ: wire.OpCreateTTL, path: "/t", parentCVersion: 6, ttl: 1000},
	}}, nil)
	l.add(hdr(6, 0x11), &txn{typ: wire.OpCloseSession, paths: []string{"/a/x"}}, &d)
	l.add(hdr(7, 0x12), &txn{typ: wire.OpCreateSession, timeout: 5000}, nil)
	l.add(hdr(8, 0x10), &txn{typ: wire.OpSetACL, path: "/a", acl: alice, version: 1}, nil)
	l.add(hdr(9, 0x10), &txn{typ: wire.OpMulti, subs: []txn{{typ: wire.OpDelete, path: "/m"}, {typ: wire.OpError, err: -101}}}, nil)
	l.add(hdr(10, 0x10), &txn{typ: wire.OpCloseSession, legacy: true}, nil)
	return [][]byte{l.e.Bytes(), append(bytes.Clone(l.e.Bytes()), make([]byte, 64)...)}
}

// TestWriteFuzzSeeds writes the encoded seeds into testdata/fuzz when ZKDATA_WRITE_SEEDS is set.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("ZKDATA_WRITE_SEEDS") == "" {
		t.Skip("set ZKDATA_WRITE_SEEDS=1 to write the fuzz seeds")
	}
	for target, seeds := range map[string][][]byte{"FuzzSnapshot": snapshotSeeds(), "FuzzTxnLog": logSeeds()} {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("encoded-%d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

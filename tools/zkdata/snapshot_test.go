package zkdata

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang/snappy"
)

func gzipBytes(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// snappyStream writes b as snappy-java's SnappyOutputStream does, in chunks of chunk bytes,
// with the stream header repeated before the second chunk (concatenated streams).
func snappyStream(b []byte, chunk int) []byte {
	header := append(append([]byte{}, snappyMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	out := append([]byte{}, header...)
	for i := 0; len(b) > 0; i++ {
		n := min(chunk, len(b))
		c := snappy.Encode(nil, b[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(c)))
		out = append(out, c...)
		b = b[n:]
		if i == 0 {
			out = append(out, header...)
		}
	}
	return out
}

// TestSnapshotEncodings: a snapshot plain, gzip and snappy, with and without the digest.
func TestSnapshotEncodings(t *testing.T) {
	tr := fuzzyBase()
	a := tr.get("/a")
	tr.unDigest(a)
	a.data = bytes.Repeat([]byte("data "), 5000)
	tr.addDigest(a)
	plain := encodeSnapshot(tr, 4)
	for name, b := range map[string][]byte{
		"snapshot.4":        plain,
		"snapshot.4.gz":     gzipBytes(t, plain),
		"snapshot.4.snappy": snappyStream(plain, 1000),
		"snapshot.4.old":    encodeSnapshot(tr, 0), // no digest; the suffix means nothing
	} {
		t.Run(name, func(t *testing.T) {
			tree, err := Open(writeDir(t, map[string][]byte{name: b}), "")
			if err != nil {
				t.Fatal(err)
			}
			rep := tree.Report()
			wantDigest := !strings.HasSuffix(name, ".old")
			if tree.Zxid() != 4 || tree.Get("/a/y") == nil || tree.Get("/dead") != nil || !bytes.Equal(tree.Get("/a").Data, a.data) ||
				(rep.DigestsChecked == 1) != wantDigest || len(rep.Warnings) != 1 {
				t.Errorf("zxid %d, %d digests checked, warnings %q", tree.Zxid(), rep.DigestsChecked, rep.Warnings)
			}
		})
	}
}

// TestSnapshotFallback: a newer snapshot that fails is skipped for an older one, which more of
// the log brings to the same tree; what is wrong with each is reported.
func TestSnapshotFallback(t *testing.T) {
	l := sessionsLog(5)
	later := baseTree()
	for i := int64(1); i <= 5; i++ {
		later.sessions[0x100+i] = 1000
	}
	good := encodeSnapshot(later, 5)
	badSum := bytes.Clone(good)
	badSum[20] ^= 1
	files := map[string][]byte{
		"snapshot.0":      encodeSnapshot(baseTree(), 0),
		"snapshot.5":      badSum,
		"snapshot.4":      good[:len(good)-3], // cut short: ZooKeeper does not even try it
		"snapshot.3.gz":   []byte("not gzip"),
		"snapshot.2":      append(bytes.Clone(good[:40]), 0, 0, 0, 1, '/'), // ends well, cut inside
		"snapshot.x":      good,                                            // not a snapshot name
		"log.1":           l.e.Bytes(),
		"snapshotfile.bk": good,
	}
	tree, err := Open(writeDir(t, files), "")
	if err != nil {
		t.Fatal(err)
	}
	rep := tree.Report()
	if rep.Snapshot.Zxid != 0 || tree.Zxid() != 5 || len(tree.Sessions()) != 5 || len(rep.Skipped) != 4 {
		t.Fatalf("loaded %s, zxid %d, skipped %v", rep.Snapshot.Path, tree.Zxid(), rep.Skipped)
	}
	for i, want := range []string{"checksum mismatch", "cut short", "not a gzip", "ends after"} {
		if s := rep.Skipped[i]; !strings.Contains(s.Err.Error(), want) {
			t.Errorf("skipped %s: %v, want %q", s.Path, s.Err, want)
		}
	}
	var fe *FormatError
	if !errors.As(rep.Skipped[0].Err, &fe) || fe.Offset != int64(len(good))-13-20-13 {
		t.Errorf("checksum mismatch at %v", rep.Skipped[0].Err)
	}
}

// TestSnapshotErrors: a snapshot that ZooKeeper cannot load, with nothing older.
func TestSnapshotErrors(t *testing.T) {
	orphan := baseTree()
	z := &znode{path: "/a/b", acl: openACLID}
	orphan.root.addChild("b", z) // serialized as /a/b without /a
	cases := map[string]struct {
		snap []byte
		want string
	}{
		"magic":  {append([]byte("ZKSX"), encodeSnapshot(baseTree(), 0)[4:]...), "magic number"},
		"orphan": {encodeSnapshot(orphan, 0), "/a/b comes before its parent"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Open(writeDir(t, map[string][]byte{"snapshot.0": c.snap}), "")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "snapshot.0: offset") {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestDirectories: dataDir and dataLogDir apart, mixed up, empty or not ZooKeeper's.
func TestDirectories(t *testing.T) {
	snapDir := writeDir(t, map[string][]byte{"snapshot.0": encodeSnapshot(baseTree(), 0)})
	logDir := writeDir(t, map[string][]byte{"log.1": sessionsLog(2).e.Bytes()})
	tree, err := Open(snapDir, filepath.Join(logDir, versionDir))
	if err != nil || tree.Zxid() != 2 {
		t.Fatalf("apart: %v", err)
	}
	if _, err := Open(logDir, snapDir); err == nil || !strings.Contains(err.Error(), "check dataDir and dataLogDir") {
		t.Errorf("mixed up: %v", err)
	}
	if _, err := Open(logDir, ""); err == nil || !strings.Contains(err.Error(), "no snapshot") {
		t.Errorf("logs without a snapshot: %v", err)
	}
	if _, err := Open(writeDir(t, nil), ""); err == nil || !strings.Contains(err.Error(), "holds no ZooKeeper snapshot") {
		t.Errorf("empty: %v", err)
	}
	if _, err := Open(t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "no version-2") {
		t.Errorf("not a dataDir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(snapDir, versionDir, "log.5"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(snapDir, logDir); err == nil || !strings.Contains(err.Error(), "holds log files") {
		t.Errorf("logs among the snapshots: %v", err)
	}
}

package zkdata

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// snapMagic is the FileHeader magic of a snapshot, "ZKSN" (FileSnap.SNAP_MAGIC).
const snapMagic = 0x5a4b534e

// snappyMagic starts a snappy-java stream (SnappyCodec.MAGIC_HEADER).
var snappyMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// SnapshotFile describes the snapshot the tree was loaded from.
type SnapshotFile struct {
	Path        string
	Zxid        int64  // from the file name
	Compression string // "plain", "gzip" or "snappy"
	Znodes      int    // znodes in the snapshot, the root and /zookeeper's included
	Sessions    int    // sessions in the snapshot
	// DigestZxid is the zxid of the tree digest stored after the snapshot, 0 when there is
	// none. The snapshot holds every transaction up to Zxid and may hold later ones (ZooKeeper
	// writes snapshots while it applies transactions); replaying up to DigestZxid makes it
	// consistent again.
	DigestZxid int64
}

// SkippedSnapshot is a newer snapshot that was not used, and why.
type SkippedSnapshot struct {
	Path string
	Err  error
}

// snapDigest is the ZxidDigest stored after a snapshot (DataTree.serializeZxidDigest).
type snapDigest struct {
	zxid    int64
	version int32
	value   int64
}

// looksValid is SnapStream.isValidSnapshot: the cheap test ZooKeeper applies to pick the
// snapshots it tries. A plain snapshot must end with the seal's "/" (a 1-byte string), a
// compressed one start with its format's magic bytes.
func looksValid(f dataFile) error {
	fh, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer fh.Close()
	switch f.comp {
	case gzipped:
		var b [2]byte
		if _, err := io.ReadFull(fh, b[:]); err != nil || b[0] != 0x1f || b[1] != 0x8b {
			return fmt.Errorf("not a gzip file (ZooKeeper skips it)")
		}
	case snappied:
		b := make([]byte, len(snappyMagic))
		if _, err := io.ReadFull(fh, b); err != nil || !bytes.Equal(b, snappyMagic) {
			return fmt.Errorf("no snappy-java stream header (ZooKeeper skips it)")
		}
	default:
		if f.size < 10 {
			return fmt.Errorf("%d bytes, too short to be a snapshot (ZooKeeper skips it)", f.size)
		}
		var b [5]byte
		if _, err := fh.ReadAt(b[:], f.size-5); err != nil {
			return err
		}
		if !bytes.Equal(b[:], []byte{0, 0, 0, 1, '/'}) {
			return fmt.Errorf("does not end with the snapshot's closing \"/\": cut short (ZooKeeper skips it)")
		}
	}
	return nil
}

// loadSnapshot reads the snapshot f into a new tree.
func loadSnapshot(f dataFile) (*Tree, *snapDigest, error) {
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	var r io.Reader = fh
	switch f.comp {
	case gzipped:
		gz, err := gzip.NewReader(fh)
		if err != nil {
			return nil, nil, &FormatError{File: f.path, What: fmt.Sprintf("expected a gzip stream: %v", err)}
		}
		defer gz.Close()
		r = gz
	case snappied:
		sr, err := newSnappyReader(fh, f.size)
		if err != nil {
			return nil, nil, &FormatError{File: f.path, What: err.Error()}
		}
		r = sr
	}
	return readSnapshot(r, f.path, f.size, f.comp != plain, f.zxid)
}

// readSnapshot decodes a snapshot stream as FileSnap.deserialize does: the FileHeader, the
// sessions, the ACL map (ReferenceCountedACLCache), the znodes in depth-first order until the
// path "/", the seal (an Adler-32 of everything before it, and "/"), then, when present, the
// tree digest (ZxidDigest) and a second seal over everything before it.
func readSnapshot(r io.Reader, path string, size int64, comp bool, zxid int64) (*Tree, *snapDigest, error) {
	s := newStream(r, path, size, comp)
	t := newTree()

	at := s.off
	magic := s.int32("the snapshot magic number")
	s.int32("the snapshot format version")
	s.int64("the database id")
	if s.err == nil && uint32(magic) != snapMagic {
		s.fail(at, "expected the snapshot magic number %#x (\"ZKSN\"), found %#x", snapMagic, uint32(magic))
	}

	for i, n := int32(0), s.count("the session count"); i < n && s.err == nil; i++ {
		id := s.int64("a session id")
		t.sessions[id] = s.int32("a session timeout")
	}
	for i, n := int32(0), s.count("the ACL map size"); i < n && s.err == nil; i++ {
		id := s.int64("an ACL number")
		if acl := s.acls(); s.err == nil {
			t.acls.load(id, acl)
		}
	}

	nodes := 0
	for s.err == nil {
		at = s.off
		p, ok := s.string("a znode path")
		if s.err != nil {
			break
		}
		if !ok {
			s.fail(at, "expected a znode path or the closing \"/\", found a null string")
			break
		}
		if p == "/" {
			break
		}
		z := &znode{path: p}
		z.data = s.bytes("znode data")
		z.acl = s.int64("an ACL number")
		z.czxid = s.int64("czxid")
		z.mzxid = s.int64("mzxid")
		z.ctime = s.int64("ctime")
		z.mtime = s.int64("mtime")
		z.version = s.int32("version")
		z.cversion = s.int32("cversion")
		z.aversion = s.int32("aversion")
		z.owner = s.int64("ephemeralOwner")
		z.pzxid = s.int64("pzxid")
		if s.err != nil {
			break
		}
		if p == "" {
			if t.root != nil {
				s.fail(at, "a second root znode")
				break
			}
			z.path = "/"
			t.root = z
		} else {
			i := strings.LastIndexByte(p, '/')
			if i < 0 || i == len(p)-1 || strings.Contains(p, "//") {
				s.fail(at, "expected a znode path, found %q", p)
				break
			}
			parent := t.get(p[:i])
			if parent == nil {
				s.fail(at, "znode %s comes before its parent", p)
				break
			}
			if t.nodes[p] != nil {
				s.fail(at, "znode %s appears twice", p)
				break
			}
			parent.addChild(p[i+1:], z)
		}
		t.nodes[z.path] = z
		t.addDigest(z)
		t.addEphemeral(z)
		t.acls.addUsage(z.acl)
		nodes++
	}
	if s.err == nil && t.root == nil {
		s.fail(s.off, "the snapshot has no root znode")
	}
	s.seal()

	// The digest came in ZooKeeper 3.6 after the seal, so that older readers stop before it:
	// an input that ends inside it has none.
	var dg *snapDigest
	if s.err == nil {
		d := snapDigest{zxid: s.int64("the digest zxid"), version: s.int32("the digest version")}
		if d.version < 2 {
			at = s.off
			if h, ok := s.string("the digest"); ok && s.err == nil {
				v, err := strconv.ParseUint(h, 16, 64)
				if err != nil {
					s.fail(at, "expected a hex digest, found %q", h)
				}
				d.value = int64(v)
			}
		} else {
			d.value = s.int64("the digest")
		}
		if s.eof() {
			s.err = nil
		} else {
			s.seal()
			if d.zxid > 0 {
				dg = &d
			}
		}
	}
	if s.err != nil {
		return nil, nil, s.err
	}
	t.acls.purgeUnused()
	t.zxid = zxid
	t.report.Snapshot = SnapshotFile{Path: path, Zxid: zxid, Znodes: nodes, Sessions: len(t.sessions)}
	if dg != nil {
		t.report.Snapshot.DigestZxid = dg.zxid
	}
	return t, dg, nil
}

// seal checks a SnapStream seal: the Adler-32 of everything read so far, as a long, and "/".
func (s *stream) seal() {
	if s.err != nil {
		return
	}
	sum := int64(s.sum.Sum32())
	at := s.off
	v := s.int64("the snapshot checksum")
	s.string("the \"/\" after the checksum")
	if s.err == nil && v != sum {
		s.fail(at, "checksum mismatch: stored Adler-32 %#x, computed %#x over the bytes before it", v, sum)
	}
}

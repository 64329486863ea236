package zkdata

import (
	"hash/adler32"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/corral/corral/wire"
)

// Encoders of ZooKeeper's files, for tests: the writing side of what the package reads.

// baseTree is the tree a fresh ZooKeeper starts with (the DataTree constructor): the root,
// /zookeeper, /zookeeper/quota and /zookeeper/config, whose ACL is world:anyone:r.
func baseTree() *Tree {
	t := newTree()
	mk := func(path string) *znode {
		z := &znode{path: path, data: []byte{}, acl: openACLID}
		t.nodes[path] = z
		return z
	}
	t.root = mk("/")
	zk := mk("/zookeeper")
	t.root.addChild("zookeeper", zk)
	zk.addChild("quota", mk("/zookeeper/quota"))
	cfg := mk("/zookeeper/config")
	zk.addChild("config", cfg)
	cfg.acl = t.acls.convert(wire.ReadACLUnsafe)
	for _, z := range t.nodes {
		t.addDigest(z)
	}
	return t
}

// encodeSnapshot serializes t as FileSnap.serialize does, with the digest of t at digestZxid
// when that is not 0.
func encodeSnapshot(t *Tree, digestZxid int64) []byte {
	e := wire.NewEncoder(nil)
	e.Int32(snapMagic)
	e.Int32(2)
	e.Int64(-1)
	ids := make([]int64, 0, len(t.sessions))
	for id := range t.sessions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	e.Int32(int32(len(ids)))
	for _, id := range ids {
		e.Int64(id)
		e.Int32(t.sessions[id])
	}
	ids = ids[:0]
	for id := range t.acls.lists {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	e.Int32(int32(len(ids)))
	for _, id := range ids {
		e.Int64(id)
		wire.EncodeACLs(e, t.acls.lists[id])
	}
	t.walk(t.root, func(z *znode) error {
		if z == t.root {
			e.String("")
		} else {
			e.String(z.path)
		}
		e.Buffer(z.data)
		e.Int64(z.acl)
		for _, v := range []int64{z.czxid, z.mzxid, z.ctime, z.mtime} {
			e.Int64(v)
		}
		e.Int32(z.version)
		e.Int32(z.cversion)
		e.Int32(z.aversion)
		e.Int64(z.owner)
		e.Int64(z.pzxid)
		return nil
	})
	e.String("/")
	seal(e)
	if digestZxid != 0 {
		e.Int64(digestZxid)
		e.Int32(digestVersion)
		e.Int64(t.digest)
		seal(e)
	}
	return e.Bytes()
}

func seal(e *wire.Encoder) {
	e.Int64(int64(adler32.Checksum(e.Bytes())))
	e.String("/")
}

// logWriter builds a transaction log.
type logWriter struct {
	e    *wire.Encoder
	offs []int64
}

func newLogWriter() *logWriter {
	e := wire.NewEncoder(nil)
	e.Int32(logMagic)
	e.Int32(2)
	e.Int64(0)
	return &logWriter{e: e}
}

// add appends an entry for x with header h, and a TxnDigest when digest is not nil.
func (l *logWriter) add(h txnHeader, x *txn, digest *int64) {
	h.typ = x.typ
	b := wire.NewEncoder(nil)
	b.Int64(h.clientID)
	b.Int32(h.cxid)
	b.Int64(h.zxid)
	b.Int64(h.time)
	b.Int32(int32(h.typ))
	encodeTxn(b, x)
	if digest != nil {
		b.Int32(digestVersion)
		b.Int64(*digest)
	}
	l.raw(b.Bytes())
}

// raw appends an entry with the given bytes.
func (l *logWriter) raw(body []byte) {
	l.offs = append(l.offs, int64(l.e.Len()))
	l.e.Int64(int64(adler32.Checksum(body)))
	l.e.Buffer(body)
	l.e.Raw([]byte{entryEnd})
}

// encodeTxn appends the record of x (the inverse of decodeTxn; legacy closeSessions and V0
// creates have their own encodings in the tests that use them).
func encodeTxn(b *wire.Encoder, x *txn) {
	switch x.typ {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		b.String(x.path)
		b.Buffer(x.data)
		wire.EncodeACLs(b, x.acl)
		if x.typ == wire.OpCreate || x.typ == wire.OpCreate2 {
			b.Bool(x.ephemeral)
		}
		b.Int32(x.parentCVersion)
		if x.typ == wire.OpCreateTTL {
			b.Int64(x.ttl)
		}
	case wire.OpDelete, wire.OpDeleteContainer:
		b.String(x.path)
	case wire.OpSetData, wire.OpReconfig:
		b.String(x.path)
		b.Buffer(x.data)
		b.Int32(x.version)
	case wire.OpCheck:
		b.String(x.path)
		b.Int32(x.version)
	case wire.OpSetACL:
		b.String(x.path)
		wire.EncodeACLs(b, x.acl)
		b.Int32(x.version)
	case wire.OpCreateSession:
		b.Int32(x.timeout)
	case wire.OpCloseSession:
		if !x.legacy {
			b.Strings(x.paths)
		}
	case wire.OpError:
		b.Int32(x.err)
	case wire.OpMulti:
		b.Int32(int32(len(x.subs)))
		for i := range x.subs {
			b.Int32(int32(x.subs[i].typ))
			sub := wire.NewEncoder(nil)
			encodeTxn(sub, &x.subs[i])
			b.Buffer(sub.Bytes())
		}
	}
}

// writeDir writes files (name -> content) into dir/version-2 and returns dir.
func writeDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	v := filepath.Join(dir, versionDir)
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(v, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

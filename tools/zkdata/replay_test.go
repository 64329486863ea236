package zkdata

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/corral/corral/wire"
)

var alice = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "digest", ID: "alice:x"}}}

// fuzzyBase is a snapshot at zxid 3 of a tree that already holds the create of zxid 4:
// sessions 0x10 and 0x11; /a (zxid 1) with the ephemeral /a/x of 0x11 (zxid 2) and /a/y
// (zxid 4, beyond the snapshot); /dead, an ephemeral of 0x99, a session that is gone.
func fuzzyBase() *Tree {
	t := baseTree()
	t.sessions[0x10], t.sessions[0x11] = 30000, 30000
	add := func(parent *znode, name string, zxid, owner int64) *znode {
		z := &znode{path: strings.TrimSuffix(parent.path, "/") + "/" + name, data: []byte(name), acl: openACLID,
			czxid: zxid, mzxid: zxid, pzxid: zxid, ctime: zxid * 1000, mtime: zxid * 1000, owner: owner}
		t.unDigest(parent)
		parent.addChild(name, z)
		parent.cversion++
		parent.pzxid = zxid
		t.addDigest(parent)
		t.put(z)
		t.addEphemeral(z)
		return z
	}
	a := add(t.root, "a", 1, 0)
	add(a, "x", 2, 0x11)
	add(t.root, "dead", 3, 0x99)
	add(a, "y", 4, 0)
	return t
}

func hdr(zxid, client int64) txnHeader {
	return txnHeader{clientID: client, zxid: zxid, time: zxid * 1000}
}

// TestReplayCorners replays transactions whose effects ZooKeeper's rules decide: a create the
// fuzzy snapshot already holds, a CreateTxnV0, multis with and without an error, closeSession
// without a body and with a list naming another session's znode, a top-level check, and the
// ephemerals of a dead session at the end.
func TestReplayCorners(t *testing.T) {
	l := newLogWriter()
	l.add(hdr(4, 0x10), &txn{typ: wire.OpCreate, path: "/a/y", data: []byte("y"), parentCVersion: 2}, nil)
	v0 := wire.NewEncoder(nil) // a create of /b as a CreateTxnV0: no parentCVersion
	v0.Int64(0x10)
	v0.Int32(0)
	v0.Int64(5)
	v0.Int64(5000)
	v0.Int32(int32(wire.OpCreate))
	v0.String("/b")
	v0.Buffer(nil)
	wire.EncodeACLs(v0, alice)
	v0.Bool(false)
	l.raw(v0.Bytes())
	l.add(hdr(6, 0x10), &txn{typ: wire.OpMulti, subs: []txn{
		{typ: wire.OpCreate, path: "/failed", parentCVersion: 4},
		{typ: wire.OpError, err: int32(wire.ErrBadVersion)},
	}}, nil)
	l.add(hdr(7, 0x10), &txn{typ: wire.OpMulti, subs: []txn{
		{typ: wire.OpCreate, path: "/m", data: []byte{}, parentCVersion: 4},
		{typ: wire.OpSetData, path: "/a", data: []byte("A"), version: 1},
		{typ: wire.OpCheck, path: "/a", version: 1},
		{typ: wire.OpDelete, path: "/nonexistent"},
	}}, nil)
	l.add(hdr(8, 0x11), &txn{typ: wire.OpCloseSession, legacy: true}, nil)
	l.add(hdr(9, 0x12), &txn{typ: wire.OpCreateSession, timeout: 5000}, nil)
	l.add(hdr(10, 0x12), &txn{typ: wire.OpCreate, path: "/e", ephemeral: true, parentCVersion: 5}, nil)
	l.add(hdr(11, 0x10), &txn{typ: wire.OpCreate, path: "/f", ephemeral: true, parentCVersion: 6}, nil)
	l.add(hdr(12, 0x12), &txn{typ: wire.OpCloseSession, paths: []string{"/f"}}, nil)
	l.add(hdr(13, 0x10), &txn{typ: wire.OpSetACL, path: "/a", acl: alice, version: 1}, nil)
	l.add(hdr(14, 0x10), &txn{typ: wire.OpCreateContainer, path: "/c", parentCVersion: 7}, nil)
	l.add(hdr(15, 0x10), &txn{typ: wire.OpCreateTTL, path: "/t", parentCVersion: 8, ttl: 1000}, nil)
	l.add(hdr(16, 0x10), &txn{typ: wire.OpCheck, path: "/a", version: 1}, nil)

	base := fuzzyBase()
	dir := writeDir(t, map[string][]byte{
		"snapshot.3": encodeSnapshot(base, 0),
		"log.4":      l.e.Bytes(),
	})
	tree, err := Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	rep := tree.Report()
	if tree.Zxid() != 16 || rep.Txns != 13 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "not alive") {
		t.Errorf("zxid %d, %d txns, warnings %q", tree.Zxid(), rep.Txns, rep.Warnings)
	}
	if s := tree.Sessions(); len(s) != 1 || s[0].ID != 0x10 || s[0].Timeout.Milliseconds() != 30000 {
		t.Errorf("sessions %+v", s)
	}
	var paths []string
	tree.Walk(func(n *Node) error { paths = append(paths, n.Path); return nil })
	if got := strings.Join(paths, " "); got != "/ /a /a/y /b /c /m /t /zookeeper /zookeeper/config /zookeeper/quota" {
		t.Errorf("znodes: %s", got)
	}
	stat := func(p string) wire.Stat { return tree.Get(p).Stat }
	// Root: persisted cversion 2 in the snapshot, then /b (V0: +1), /m, /e, /f, /c, /t set it
	// to 8; six children; the dead session's /dead goes at the last zxid.
	if s := stat("/"); s.Cversion != 8*2-6 || s.NumChildren != 6 || s.Pzxid != 16 {
		t.Errorf("/: %+v", s)
	}
	// /a: /a/y's create found it in place and left cversion (2) alone; the legacy closeSession
	// of 0x11 deleted /a/x at zxid 8; setData in the multi, setACL.
	if n := tree.Get("/a"); n.Stat.Cversion != 2*2-1 || n.Stat.Pzxid != 8 || n.Stat.Version != 1 || n.Stat.Mzxid != 7 ||
		string(n.Data) != "A" || n.Stat.Aversion != 1 || len(n.ACL) != 1 || n.ACL[0] != alice[0] {
		t.Errorf("/a: %+v", n)
	}
	if n := tree.Get("/b"); n == nil || n.Data != nil || n.Stat.Czxid != 5 || n.ACL[0] != alice[0] {
		t.Errorf("/b (CreateTxnV0): %+v", n)
	}
	if n := tree.Get("/m"); n == nil || n.Data == nil || len(n.Data) != 0 {
		t.Errorf("/m: %+v", n)
	}
	if n := tree.Get("/c"); n.Kind != Container || n.Stat.EphemeralOwner != 0 {
		t.Errorf("/c: %+v", n)
	}
	if n := tree.Get("/t"); n.Kind != TTL || n.TTL != 1000 || n.Stat.EphemeralOwner != 0 {
		t.Errorf("/t: %+v", n)
	}
	if tree.Get("/failed") != nil || tree.Get("/dead") != nil || tree.Get("/nonexistent") != nil {
		t.Error("a znode that should not exist does")
	}
	if n := tree.Get("/zookeeper/config"); n.ACL[0] != wire.ReadACLUnsafe[0] {
		t.Errorf("/zookeeper/config: %+v", n)
	}
}

// TestReplayErrors: what ZooKeeper cannot apply, and logs that leave transactions out.
func TestReplayErrors(t *testing.T) {
	cases := []struct {
		name string
		txns []txn
		zxid []int64
		want string
	}{
		{"gap", []txn{{typ: wire.OpCreateSession, timeout: 1}, {typ: wire.OpCreateSession, timeout: 1}},
			[]int64{4, 6}, "transactions 0x5 to 0x5 are missing"},
		{"gap after the snapshot", []txn{{typ: wire.OpCreateSession, timeout: 1}},
			[]int64{5}, "transactions 0x4 to 0x4 are missing: the one before is 0x3 (/"},
		{"backwards", []txn{{typ: wire.OpCreateSession, timeout: 1}, {typ: wire.OpCreateSession, timeout: 1}},
			[]int64{4, 4}, "zxid 0x4 does not follow 0x4"},
		{"invalid TTL", []txn{{typ: wire.OpCreateTTL, path: "/t", parentCVersion: 3, ttl: -1}},
			[]int64{4}, "invalid TTL"},
		{"relative path", []txn{{typ: wire.OpCreate, path: "a", parentCVersion: 3}},
			[]int64{4}, "invalid znode path"},
		{"setACL in a multi", []txn{{typ: wire.OpMulti, subs: []txn{{typ: wire.OpSetACL, path: "/a", version: 1}}}},
			[]int64{4}, "a multi cannot hold a setACL"},
		{"unknown type", []txn{{typ: 77}},
			[]int64{4}, "unknown transaction type 77"},
		{"next epoch", []txn{{typ: wire.OpCreateSession, timeout: 1}, {typ: wire.OpCreateSession, timeout: 1}},
			[]int64{4, 2<<32 | 1}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newLogWriter()
			for i := range c.txns {
				l.add(hdr(c.zxid[i], 0x20+int64(i)), &c.txns[i], nil)
			}
			dir := writeDir(t, map[string][]byte{"snapshot.3": encodeSnapshot(fuzzyBase(), 0), "log.4": l.e.Bytes()})
			_, err := Open(dir, "")
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.HasSuffix(fe.File, "log.4") || fe.Offset != l.offs[len(l.offs)-1] || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q at offset %d of log.4", err, c.want, l.offs[len(l.offs)-1])
			}
		})
	}
}

// TestDigests: the digests a log carries are checked, and a wrong one is reported.
func TestDigests(t *testing.T) {
	base := baseTree()
	model := baseTree()
	l := newLogWriter()
	for i, p := range []string{"/a", "/b", "/c"} {
		x := txn{typ: wire.OpCreate, path: p, data: []byte(p), parentCVersion: int32(i + 1)}
		h := hdr(int64(i+1), 1)
		model.apply(&h, &x)
		d := model.digest
		if p == "/b" {
			d++
		}
		l.add(h, &x, &d)
	}
	dir := writeDir(t, map[string][]byte{"snapshot.0": encodeSnapshot(base, 0), "log.1": l.e.Bytes()})
	tree, err := Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep := tree.Report(); rep.DigestsChecked != 3 || len(rep.DigestMismatches) != 1 || rep.DigestMismatches[0] != 2 {
		t.Errorf("%d checked, mismatches %v", rep.DigestsChecked, rep.DigestMismatches)
	}
}

// TestACLs: ACL numbers are handed out and dropped as ZooKeeper's cache does, and a znode
// whose number resolves to nothing is an error.
func TestACLs(t *testing.T) {
	c := newACLCache()
	a := c.convert(alice)
	if b := c.convert(alice); b != a || c.refs[a] != 2 {
		t.Fatalf("same list: %d and %d, %d users", a, b, c.refs[a])
	}
	c.removeUsage(a)
	c.removeUsage(a)
	if _, ok := c.lookup(a); ok {
		t.Fatal("an unused list stays")
	}
	if b := c.convert(alice); b == a {
		t.Fatal("a dropped number came back")
	}
	if id := c.convert(nil); id != openACLID {
		t.Fatalf("null ACL: %d", id)
	}
	if id := c.convert([]wire.ACL{}); id == openACLID {
		t.Fatal("an empty ACL is not world:anyone")
	}

	base := baseTree()
	base.get("/zookeeper").acl = 77
	dir := writeDir(t, map[string][]byte{"snapshot.0": encodeSnapshot(base, 0)})
	if _, err := Open(dir, ""); err == nil || !strings.Contains(err.Error(), "ACL 77") {
		t.Fatalf("dangling ACL: %v", err)
	}
}

// TestDigestCheck: which digest mismatches count. The stored digests are all 100 here; each
// step sets the tree's zxid and digest and replays a transaction carrying a digest.
func TestDigestCheck(t *testing.T) {
	cases := []struct {
		name    string
		snap    *snapDigest // the snapshot is at zxid 10, its tree's digest 99
		steps   [][2]int64  // zxid, tree digest
		checked int
		want    []int64
	}{
		{"snapshot digest off, then a match", &snapDigest{10, 2, 100}, [][2]int64{{11, 100}}, 2, nil},
		{"snapshot digest off, then off", &snapDigest{10, 2, 100}, [][2]int64{{11, 99}}, 2, []int64{11, 10}},
		{"fuzzy snapshot", &snapDigest{12, 2, 100}, [][2]int64{{11, 5}, {12, 99}, {13, 100}}, 3, nil},
		{"no snapshot digest", nil, [][2]int64{{11, 99}, {12, 100}, {13, 99}}, 3, []int64{13}},
		{"never a match", nil, [][2]int64{{11, 99}, {12, 99}}, 2, []int64{11, 12}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree()
			tr.zxid, tr.digest = 10, 99
			dc := newDigestCheck(tr, c.snap)
			for _, s := range c.steps {
				tr.zxid, tr.digest = s[0], s[1]
				dc.applied(&entry{hdr: txnHeader{zxid: s[0]}, hasDigest: true, digest: txnDigest{digestVersion, 100}})
			}
			dc.done()
			rep := tr.Report()
			if rep.DigestsChecked != c.checked || fmt.Sprint(rep.DigestMismatches) != fmt.Sprint(c.want) {
				t.Errorf("%d checked, mismatches %v; want %d, %v", rep.DigestsChecked, rep.DigestMismatches, c.checked, c.want)
			}
		})
	}
}

package zkdata

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/corral/corral/wire"
)

// Kind is what a znode is, decoded from its stored ephemeralOwner as EphemeralType.get does.
type Kind uint8

// Znode kinds.
const (
	Persistent Kind = iota
	Ephemeral       // owned by Stat.EphemeralOwner, a session
	Container
	TTL // Node.TTL holds the time to live
)

func (k Kind) String() string {
	switch k {
	case Ephemeral:
		return "ephemeral"
	case Container:
		return "container"
	case TTL:
		return "ttl"
	}
	return "persistent"
}

// Node is one znode as a client of the ZooKeeper that wrote the files would read it.
type Node struct {
	Path string
	// Data is nil for a znode whose data is null, distinct from empty. It may share memory with
	// other nodes or the log entry it came from: do not modify it.
	Data []byte
	// ACL is shared between nodes with the same ACL: do not modify it.
	ACL []wire.ACL
	// Stat is what getData returns: Cversion counts child creations and deletions, and
	// EphemeralOwner is 0 for containers and TTL nodes, as ZooKeeper reports them.
	Stat wire.Stat
	Kind Kind
	// TTL is a TTL node's time to live in milliseconds.
	TTL int64
}

// Session is a session ZooKeeper still knew at the last transaction.
type Session struct {
	ID      int64
	Timeout time.Duration // as negotiated
}

// Ephemeral owners of the non-ephemeral kinds (EphemeralType).
const (
	containerOwner   = math.MinInt64
	extendedMask     = -0x0100000000000000 // 0xff00000000000000
	reservedMask     = 0x00ffff0000000000
	extendedValueMax = 0x000000ffffffffff
)

// kindOf decodes a stored ephemeralOwner as ZooKeeper with zookeeper.extendedTypesEnabled does.
// An owner with the extended mask but other feature bits set is read as ZooKeeper without
// extended types reads it, an ordinary session (server id 255); with them ZooKeeper refuses it.
func kindOf(owner int64) (Kind, int64) {
	switch {
	case owner == 0:
		return Persistent, 0
	case owner == containerOwner:
		return Container, 0
	case owner&extendedMask == extendedMask && owner&reservedMask == 0:
		return TTL, owner & extendedValueMax
	}
	return Ephemeral, 0
}

// znode is a node of the tree with the fields ZooKeeper persists (StatPersisted): cversion
// counts child creations only; the client's cversion and numChildren are derived.
type znode struct {
	path     string
	data     []byte
	acl      int64 // key into the ACL cache, -1 for world:anyone:cdrwa
	czxid    int64
	mzxid    int64
	ctime    int64
	mtime    int64
	pzxid    int64
	owner    int64
	version  int32
	cversion int32
	aversion int32
	children map[string]*znode // by name; nil when none were ever added
}

func (n *znode) addChild(name string, c *znode) {
	if n.children == nil {
		n.children = make(map[string]*znode, 4)
	}
	n.children[name] = c
}

// stat is the client's view of n's stat (DataNode.copyStat).
func (n *znode) stat() wire.Stat {
	nc := int32(len(n.children))
	owner := n.owner
	if k, _ := kindOf(owner); k != Ephemeral {
		owner = 0
	}
	return wire.Stat{
		Czxid: n.czxid, Mzxid: n.mzxid, Ctime: n.ctime, Mtime: n.mtime,
		Version: n.version, Cversion: n.cversion*2 - nc, Aversion: n.aversion,
		EphemeralOwner: owner, DataLength: int32(len(n.data)), NumChildren: nc, Pzxid: n.pzxid,
	}
}

// Tree is a ZooKeeper data tree at its last transaction, with the sessions alive then. Open
// returns it complete and nothing modifies it afterwards: its methods are safe for concurrent
// use.
type Tree struct {
	nodes      map[string]*znode // every node by path, the root as "/"
	root       *znode
	acls       aclCache
	sessions   map[int64]int32
	ephemerals map[int64]map[string]struct{} // paths by owning session (ordinary ephemerals)
	zxid       int64
	digest     int64  // sum of node digests outside /zookeeper/ (NodeHashMapImpl)
	scratch    []byte // for nodeDigest
	report     Report
}

func newTree() *Tree {
	return &Tree{
		nodes:      make(map[string]*znode),
		acls:       newACLCache(),
		sessions:   make(map[int64]int32),
		ephemerals: make(map[int64]map[string]struct{}),
	}
}

// Zxid is the zxid of the last transaction in the tree.
func (t *Tree) Zxid() int64 { return t.zxid }

// Report says which files the tree was read from and what was noticed on the way.
func (t *Tree) Report() Report { return t.report }

// Sessions lists the sessions alive at the last transaction, by id.
func (t *Tree) Sessions() []Session {
	out := make([]Session, 0, len(t.sessions))
	for id, to := range t.sessions {
		out = append(out, Session{ID: id, Timeout: time.Duration(to) * time.Millisecond})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Get returns the znode at path, or nil.
func (t *Tree) Get(path string) *Node {
	z := t.get(path)
	if z == nil || !t.reachable(z) {
		return nil
	}
	return t.node(z)
}

// ErrStop may be returned by a Walk callback to end the walk early without an error.
var ErrStop = errors.New("zkdata: stop walking")

// Walk calls fn for every znode, parents before their children and siblings in byte order of
// their names, starting with the root ("/") and including ZooKeeper's own /zookeeper subtree.
// It stops at the first error fn returns and returns it (nil for ErrStop).
func (t *Tree) Walk(fn func(*Node) error) error {
	err := t.walk(t.root, func(z *znode) error { return fn(t.node(z)) })
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}

func (t *Tree) walk(z *znode, fn func(*znode) error) error {
	if err := fn(z); err != nil {
		return err
	}
	if len(z.children) == 0 {
		return nil
	}
	names := make([]string, 0, len(z.children))
	for name := range z.children {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := t.walk(z.children[name], fn); err != nil {
			return err
		}
	}
	return nil
}

func (t *Tree) node(z *znode) *Node {
	kind, ttl := kindOf(z.owner)
	acl, _ := t.acls.lookup(z.acl)
	return &Node{Path: z.path, Data: z.data, ACL: acl, Stat: z.stat(), Kind: kind, TTL: ttl}
}

// get looks a path up the way DataTree does, where "" is an alias of the root.
func (t *Tree) get(path string) *znode {
	if path == "" {
		return t.root
	}
	return t.nodes[path]
}

// reachable reports whether z hangs from the root: a node whose parent was deleted while it
// still had children stays in ZooKeeper's path map, but not in the tree.
func (t *Tree) reachable(z *znode) bool {
	for z != t.root {
		i := strings.LastIndexByte(z.path, '/')
		parent := t.get(z.path[:i])
		if parent == nil || parent.children[z.path[i+1:]] != z {
			return false
		}
		z = parent
	}
	return true
}

// put adds z to the path map, replacing (and un-digesting) what was there.
func (t *Tree) put(z *znode) {
	if old := t.nodes[z.path]; old != nil {
		t.unDigest(old)
	}
	t.nodes[z.path] = z
	t.addDigest(z)
}

func (t *Tree) addEphemeral(z *znode) {
	if k, _ := kindOf(z.owner); k != Ephemeral {
		return
	}
	set := t.ephemerals[z.owner]
	if set == nil {
		set = make(map[string]struct{})
		t.ephemerals[z.owner] = set
	}
	set[z.path] = struct{}{}
}

// checkACLs makes sure every znode's ACL resolves, which ZooKeeper only finds out when a client
// reads it (ReferenceCountedACLCache.convertLong throws).
func (t *Tree) checkACLs() error {
	return t.walk(t.root, func(z *znode) error {
		if _, ok := t.acls.lookup(z.acl); !ok {
			return fmt.Errorf("zkdata: znode %s refers to ACL %d, which is in neither the snapshot's ACL map nor a later transaction", z.path, z.acl)
		}
		return nil
	})
}

package zkimport

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/tools/zkdata"
)

// Node is one znode as read from the source.
type Node struct {
	Path string
	Data []byte // nil: null data, distinct from empty
	ACL  []zk.ACL
	Stat zk.Stat
	// Kind is Persistent for every znode a live source reads (the client protocol does not
	// tell containers and TTL nodes apart); a data directory says.
	Kind zkdata.Kind
	TTL  int64 // milliseconds, for a TTL node
	// Children are the names of the node's children, ephemerals and /zookeeper excluded.
	Children []string
}

// errSkip marks a znode that is not copied (it vanished while it was read, or it is ephemeral).
var errSkip = errors.New("not copied")

// readNode reads one znode's data, stat, ACL and children from the source. An ephemeral znode
// and one deleted meanwhile give errSkip.
func readNode(c *zk.Conn, p string) (*Node, error) {
	data, st, err := c.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, errSkip
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if st.EphemeralOwner != 0 {
		return nil, errSkip
	}
	acl, _, err := c.GetACL(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, errSkip
	}
	if err != nil {
		return nil, fmt.Errorf("reading the ACL of %s: %w", p, err)
	}
	kids, _, err := c.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, errSkip
	}
	if err != nil {
		return nil, fmt.Errorf("listing the children of %s: %w", p, err)
	}
	n := &Node{Path: p, Data: data, ACL: acl, Stat: *st}
	for _, k := range kids {
		if child := path.Join(p, k); child != "/zookeeper" {
			n.Children = append(n.Children, k)
		}
	}
	return n, nil
}

// storedCversion is the count of child creations ZooKeeper keeps (StatPersisted.cversion) and
// names the next sequential child after: clients see 2 × stored − numChildren.
func storedCversion(st *zk.Stat) int32 { return (st.Cversion + st.NumChildren) / 2 }

// dataDirLevels reads a stopped ZooKeeper's data directory (tools/zkdata) and returns its
// persistent znodes by depth (level 0 is path itself), /zookeeper excluded, with how many
// ephemerals it left out.
func dataDirLevels(dataDir, dataLogDir, root string) ([][]*Node, int, error) {
	t, err := zkdata.Open(dataDir, dataLogDir)
	if err != nil {
		return nil, 0, err
	}
	if m := t.Report().DigestMismatches; len(m) > 0 {
		// ZooKeeper logs a tree digest with its transactions; a replay that does not reach it
		// did not rebuild the tree ZooKeeper had.
		return nil, 0, fmt.Errorf("%s: the replayed tree differs from the digest ZooKeeper logged at zxid 0x%x (%d mismatches): not importing it",
			dataDir, m[0], len(m))
	}
	if t.Get(root) == nil {
		return nil, 0, fmt.Errorf("%s: no znode %s at zxid 0x%x", dataDir, root, t.Zxid())
	}
	var levels [][]*Node
	ephemerals := 0
	depth := func(p string) int {
		if p == root {
			return 0
		}
		return strings.Count(strings.TrimPrefix(p, strings.TrimSuffix(root, "/")), "/")
	}
	err = t.Walk(func(n *zkdata.Node) error {
		if n.Path != root && !strings.HasPrefix(n.Path, strings.TrimSuffix(root, "/")+"/") ||
			n.Path == "/zookeeper" || strings.HasPrefix(n.Path, "/zookeeper/") {
			return nil
		}
		if n.Kind == zkdata.Ephemeral {
			ephemerals++
			return nil
		}
		d := depth(n.Path)
		for len(levels) <= d {
			levels = append(levels, nil)
		}
		levels[d] = append(levels[d], fromWire(n))
		return nil
	})
	return levels, ephemerals, err
}

// fromWire converts a node read from a data directory.
func fromWire(n *zkdata.Node) *Node {
	acl := make([]zk.ACL, len(n.ACL))
	for i, a := range n.ACL {
		acl[i] = zk.ACL{Perms: a.Perms, Scheme: a.ID.Scheme, ID: a.ID.ID}
	}
	st := n.Stat
	return &Node{Path: n.Path, Data: n.Data, ACL: acl, Kind: n.Kind, TTL: n.TTL, Stat: zk.Stat{
		Czxid: st.Czxid, Mzxid: st.Mzxid, Ctime: st.Ctime, Mtime: st.Mtime, Version: st.Version,
		Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: st.EphemeralOwner,
		DataLength: st.DataLength, NumChildren: st.NumChildren, Pzxid: st.Pzxid}}
}

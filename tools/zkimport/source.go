package zkimport

import (
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"
)

// Node is one znode as read from the source.
type Node struct {
	Path string
	Data []byte // nil: null data, distinct from empty
	ACL  []zk.ACL
	Stat zk.Stat
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

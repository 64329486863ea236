package zkdata

import "github.com/corral/corral/wire"

// openACLID is the key of world:anyone:cdrwa, which the cache never stores
// (ReferenceCountedACLCache.OPEN_UNSAFE_ACL_ID); a null ACL vector maps to it.
const openACLID = -1

// aclCache mirrors ReferenceCountedACLCache: znodes refer to ACL lists by a number; a list gets
// the next number the first time it is seen and is dropped when its last user goes. The numbers
// matter because a snapshot is fuzzy: a znode in it may refer to a number the snapshot's ACL map
// does not hold yet, which a replayed create then assigns.
type aclCache struct {
	lists map[int64][]wire.ACL
	ids   map[string]int64 // encoded list -> number
	refs  map[int64]int64
	index int64 // the highest number handed out
	enc   wire.Encoder
}

func newACLCache() aclCache {
	return aclCache{lists: make(map[int64][]wire.ACL), ids: make(map[string]int64), refs: make(map[int64]int64)}
}

func (c *aclCache) key(acl []wire.ACL) string {
	c.enc.Reset()
	wire.EncodeACLs(&c.enc, acl)
	return string(c.enc.Bytes())
}

// load adds a list read from a snapshot's ACL map, with no users yet.
func (c *aclCache) load(id int64, acl []wire.ACL) {
	if id > c.index {
		c.index = id
	}
	c.lists[id] = acl
	c.ids[c.key(acl)] = id
	c.refs[id] = 0
}

// convert returns the number of acl, assigning one if needed, and counts a user.
func (c *aclCache) convert(acl []wire.ACL) int64 {
	if acl == nil {
		return openACLID
	}
	k := c.key(acl)
	id, ok := c.ids[k]
	if !ok {
		c.index++
		id = c.index
		c.lists[id] = acl
		c.ids[k] = id
	}
	c.addUsage(id)
	return id
}

func (c *aclCache) addUsage(id int64) {
	if _, ok := c.lists[id]; ok && id != openACLID {
		c.refs[id]++
	}
}

func (c *aclCache) removeUsage(id int64) {
	acl, ok := c.lists[id]
	if !ok || id == openACLID {
		return
	}
	c.refs[id]--
	if c.refs[id] <= 0 {
		c.drop(id, acl)
	}
}

func (c *aclCache) drop(id int64, acl []wire.ACL) {
	delete(c.refs, id)
	delete(c.ids, c.key(acl))
	delete(c.lists, id)
}

// purgeUnused drops the lists no znode uses, after a snapshot is loaded.
func (c *aclCache) purgeUnused() {
	for id, n := range c.refs {
		if n <= 0 {
			c.drop(id, c.lists[id])
		}
	}
}

func (c *aclCache) lookup(id int64) ([]wire.ACL, bool) {
	if id == openACLID {
		return wire.OpenACLUnsafe, true
	}
	acl, ok := c.lists[id]
	return acl, ok
}

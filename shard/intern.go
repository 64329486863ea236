package shard

import (
	"encoding/binary"
	"runtime"
	"sync"
	"weak"

	"github.com/corral/corral/wire"
)

// aclList is an interned ACL: nodes with identical ACL lists (same entries, same order) share one
// *aclList, so a tree of a million nodes with a handful of distinct ACLs holds a handful of
// slices. The list is immutable.
type aclList struct {
	acl []wire.ACL
}

// interner maps the encoding of an ACL list to its shared *aclList. Entries are weak: once no node
// (in any shard of the process, in any view) references a list, the collector reclaims it and a
// cleanup removes the entry. Interning has no effect on semantics, only on memory.
var interner = struct {
	mu sync.Mutex
	m  map[string]weak.Pointer[aclList]
}{m: make(map[string]weak.Pointer[aclList])}

// appendACLKey appends the interner's key of acls to b.
func appendACLKey(b []byte, acls []wire.ACL) []byte {
	for _, a := range acls {
		b = binary.BigEndian.AppendUint32(b, uint32(a.Perms))
		b = binary.AppendUvarint(b, uint64(len(a.ID.Scheme)))
		b = append(b, a.ID.Scheme...)
		b = binary.AppendUvarint(b, uint64(len(a.ID.ID)))
		b = append(b, a.ID.ID...)
	}
	return b
}

// internACL returns the shared list equal to acls (which is copied, never retained).
func internACL(acls []wire.ACL) *aclList {
	var buf [64]byte // most lists' keys fit: a lookup then allocates nothing
	kb := appendACLKey(buf[:0], acls)
	interner.mu.Lock()
	defer interner.mu.Unlock()
	if wp, ok := interner.m[string(kb)]; ok {
		if p := wp.Value(); p != nil {
			return p
		}
	}
	key := string(kb)
	p := &aclList{acl: append(make([]wire.ACL, 0, len(acls)), acls...)}
	interner.m[key] = weak.Make(p)
	runtime.AddCleanup(p, func(key string) {
		interner.mu.Lock()
		defer interner.mu.Unlock()
		if wp, ok := interner.m[key]; ok && wp.Value() == nil {
			delete(interner.m, key)
		}
	}, key)
	return p
}

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

func aclKey(acls []wire.ACL) string {
	b := make([]byte, 0, 32*len(acls))
	for _, a := range acls {
		b = binary.BigEndian.AppendUint32(b, uint32(a.Perms))
		b = binary.AppendUvarint(b, uint64(len(a.ID.Scheme)))
		b = append(b, a.ID.Scheme...)
		b = binary.AppendUvarint(b, uint64(len(a.ID.ID)))
		b = append(b, a.ID.ID...)
	}
	return string(b)
}

// internACL returns the shared list equal to acls (which is copied, never retained).
func internACL(acls []wire.ACL) *aclList {
	key := aclKey(acls)
	interner.mu.Lock()
	defer interner.mu.Unlock()
	if wp, ok := interner.m[key]; ok {
		if p := wp.Value(); p != nil {
			return p
		}
	}
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

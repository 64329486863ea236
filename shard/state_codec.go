package shard

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/corral/corral/wire"
)

// Encodings of the state's parts, shared by the pebble store, snapshots and the determinism
// tests. Node value:
//
//	u8 version (2) | u8 flags (bit 0: stub) | varint czxid, mzxid, pzxid, ctime, mtime, owner
//	| varint version, cversion, aversion, numChildren | bytes data (nil-preserving)
//	| uvarint len(acl) | (varint perms, str scheme, str id)...
//
// Version 1 had no flags byte; it still decodes (a store written before stubs existed).
const nodeCodecVersion = 2

const nodeFlagStub = 1

func appendNode(dst []byte, n *node) []byte {
	var flags byte
	if n.isStub() {
		flags |= nodeFlagStub
	}
	dst = append(dst, nodeCodecVersion, flags)
	for _, v := range [...]int64{n.czxid, n.mzxid, n.pzxid, n.ctime, n.mtime, n.owner,
		int64(n.version), int64(n.cversion), int64(n.aversion), int64(n.numChildren)} {
		dst = binary.AppendVarint(dst, v)
	}
	dst = appendBytes(dst, n.data)
	acls := n.aclSlice()
	dst = binary.AppendUvarint(dst, uint64(len(acls)))
	for _, a := range acls {
		dst = binary.AppendVarint(dst, int64(a.Perms))
		dst = appendStr(dst, a.ID.Scheme)
		dst = appendStr(dst, a.ID.ID)
	}
	return dst
}

// decodeNode decodes a node value; data is copied.
func decodeNode(key string, val []byte) (*node, error) {
	r := reader{buf: val}
	v := r.byte()
	if v != nodeCodecVersion && v != 1 {
		return nil, fmt.Errorf("%w: node %q version %d", ErrCorruptStore, pathOf(key), v)
	}
	n := &node{key: key}
	stub := false
	if v >= 2 {
		flags := r.byte()
		if flags&^nodeFlagStub != 0 {
			r.fail("node flags")
		}
		stub = flags&nodeFlagStub != 0
	}
	n.czxid, n.mzxid, n.pzxid = r.varint(), r.varint(), r.varint()
	n.ctime, n.mtime, n.owner = r.varint(), r.varint(), r.varint()
	n.version, n.cversion, n.aversion, n.numChildren = r.int32(), r.int32(), r.int32(), r.int32()
	if d := r.bytes(); d != nil {
		n.data = append(make([]byte, 0, len(d)), d...)
	}
	var acls []wire.ACL
	if c := r.count(3); c > 0 {
		acls = make([]wire.ACL, c)
		for i := range acls {
			acls[i].Perms = r.int32()
			acls[i].ID = wire.ID{Scheme: r.str(), ID: r.str()}
		}
	}
	if err := r.finish(); err != nil {
		return nil, fmt.Errorf("%w: node %q: %v", ErrCorruptStore, pathOf(key), err)
	}
	n.acl = internACL(acls)
	if stub {
		if len(acls) != 0 {
			return nil, fmt.Errorf("%w: stub %q with an ACL", ErrCorruptStore, pathOf(key))
		}
		n.acl = stubACL
	}
	return n, nil
}

// appendProposer encodes a proposer header: uvarint lastSeq | varint lastTime.
func appendProposer(dst []byte, p *proposer) []byte {
	dst = binary.AppendUvarint(dst, p.lastSeq)
	return binary.AppendVarint(dst, p.lastTime)
}

func decodeProposer(val []byte) (*proposer, error) {
	r := reader{buf: val}
	p := &proposer{lastSeq: r.uvarint(), lastTime: r.varint()}
	if err := r.finish(); err != nil {
		return nil, fmt.Errorf("%w: proposer: %v", ErrCorruptStore, err)
	}
	return p, nil
}

// appendResults encodes cached op results as an applied BatchResult.
func appendResults(dst []byte, results []OpResult) []byte {
	res := BatchResult{Status: BatchApplied, Results: results}
	return res.AppendTo(dst)
}

// decodeResults decodes cached op results, copying the bodies.
func decodeResults(val []byte) ([]OpResult, error) {
	res, err := DecodeBatchResult(val)
	if err != nil {
		return nil, fmt.Errorf("%w: cached results: %v", ErrCorruptStore, err)
	}
	for i := range res.Results {
		if b := res.Results[i].Body; b != nil {
			res.Results[i].Body = append(make([]byte, 0, len(b)), b...)
		}
	}
	return res.Results, nil
}

// AppendCanonical appends a canonical encoding of the whole state: the config, the last zxid,
// every node in key order, the proposer table (with cached results) by proposer id, the
// tombstones by session, the session ownership epochs by session, the routes, the prepared transaction, the transaction decisions by id and the data shards added online. Two states are equal iff their encodings are; replicas that applied the
// same batches produce identical bytes.
func (s *State) AppendCanonical(dst []byte) []byte {
	dst = append(dst, s.cfg.Tag)
	dst = appendStr(dst, s.cfg.Root)
	dst = binary.AppendVarint(dst, s.lastZxid)
	dst = binary.AppendUvarint(dst, uint64(s.tree.nodes.Len()))
	s.tree.nodes.Ascend(func(n *node) bool {
		dst = appendStr(dst, n.key)
		dst = appendNode(dst, n)
		return true
	})
	ids := make([]uint64, 0, len(s.proposers))
	for id := range s.proposers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	dst = binary.AppendUvarint(dst, uint64(len(ids)))
	for _, id := range ids {
		p := s.proposers[id]
		dst = binary.AppendUvarint(dst, id)
		dst = appendProposer(dst, p)
		for _, c := range p.ring {
			dst = binary.AppendUvarint(dst, c.seq)
			if c.seq != 0 {
				dst = appendResults(dst, c.results)
			}
		}
	}
	sessions := slices.Sorted(maps.Keys(s.tombstones.bySession))
	dst = binary.AppendUvarint(dst, uint64(len(sessions)))
	for _, id := range sessions {
		dst = binary.AppendVarint(dst, id)
		dst = binary.AppendVarint(dst, s.tombstones.bySession[id])
	}
	owned := slices.Sorted(maps.Keys(s.owners))
	dst = binary.AppendUvarint(dst, uint64(len(owned)))
	for _, id := range owned {
		dst = binary.AppendVarint(dst, id)
		dst = binary.AppendUvarint(dst, s.owners[id])
	}
	dst = appendRoutes(dst, s.routes)
	dst = s.appendTxnCanonical(dst)
	return appendAddedList(dst, s.added)
}

package shard

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/corral/corral/wire"
)

// Online subtree moves: the participant side (see doc.go, "Subtree moves"). A move of the
// subtree at Path from shard A to shard B is a cross-shard transaction whose TxnPrepare carries
// a MoveSpec instead of multi ops: A prepares the move out (it locks the whole subtree), the
// coordinator reads the subtree from A's view, B prepares the move in with that copy (it checks
// that it holds nothing there and locks the subtree too), and both commit under one zxid Z. At
// the commit A drops the subtree and records a route "Path moved to B at Z"; B installs the
// copy, nodes with their stats unchanged, and records "Path lives here since Z". Neither side
// fires watch events: no znode changed for a client.

// ErrMoved is the result of a client op whose path lies in a subtree this shard moved away, or
// of any write issued before the move (MinZxid below the move's zxid) within fenceMs of it. The
// op is not applied and consumes no zxid; OpResult.Zxid is the move's zxid. It never reaches a
// client: the server proposes the op again on the shard the path now lives on, with MinZxid
// raised to that zxid. It is not a ZooKeeper error code.
const ErrMoved wire.Err = -1001

// fenceMs is how long (batch time, ms) after a move a shard refuses every write issued before
// the move (MinZxid below the move's zxid), not only writes to the moved subtree. A session's
// writes pipelined behind a write to the moved subtree were issued before the move; they are
// sent back too, so that the server proposes them again in order after the re-routed one and a
// later write never overtakes an earlier one (FIFO client order).
const fenceMs = 10_000

// MoveSpec is the move a TxnPrepare asks for.
type MoveSpec struct {
	Path string // the subtree's root
	To   uint64 // the destination shard id
	In   bool   // this participant is the destination (else the source)
	// Nodes (In) is the subtree as the source's view holds it after its prepare
	// (View.ExportSubtree).
	Nodes []byte
}

// route is what a shard knows about a subtree that moved in or out of it.
type route struct {
	to   uint64 // 0: the subtree lives here (it moved in); else the shard it moved to
	zxid int64  // the move's commit zxid
	time int64  // the move's commit time (Unix ms)
}

// Route is a route as views report it.
type Route struct {
	Path string
	To   uint64 // 0: the subtree lives on this shard
	Zxid int64
}

// routes are the shard's routes by subtree path. Immutable once built: a change builds a new
// table, so views share it without copying (nil: no routes).
type routes struct{ byPath map[string]route }

// covering returns the route of the longest routed path that is path or an ancestor of it.
func (rs *routes) covering(path string) (string, route, bool) {
	best, found := "", false
	var br route
	if rs == nil {
		return "", br, false
	}
	for p, r := range rs.byPath {
		if isUnder(path, p) && (!found || len(p) > len(best)) {
			best, br, found = p, r, true
		}
	}
	return best, br, found
}

// isUnder reports whether path is root or in root's subtree.
func isUnder(path, root string) bool {
	return path == root || root == "/" || len(path) > len(root) && strings.HasPrefix(path, root) && path[len(root)] == '/'
}

// movedFence reports whether a client op must be sent back with ErrMoved (see ErrMoved): its
// path lies in a subtree that moved away, or it was issued before a move of the last fenceMs.
// It returns the move's zxid.
func (s *State) movedFence(op *Op, time int64) (int64, bool) {
	if s.routes == nil {
		return 0, false
	}
	if op.Session != 0 && op.Code != wire.OpCloseSession && op.Code != OpSessionOwner {
		for _, r := range s.routes.byPath {
			if r.to != 0 && op.ViewZxid < r.zxid && time-r.time < fenceMs {
				return r.zxid, true
			}
		}
	}
	var z int64
	moved := false
	opWrites(op, func(path string, _ bool) {
		if _, r, ok := s.routes.covering(path); ok && r.to != 0 && !moved {
			z, moved = r.zxid, true
		}
	})
	return z, moved
}

// movedAway reports whether path lies in a subtree that moved away from this shard.
func (s *State) movedAway(path string) bool {
	_, r, ok := s.routes.covering(path)
	return ok && r.to != 0
}

// setRoute records a route (copy on write).
func (s *State) setRoute(path string, r route) {
	next := &routes{byPath: map[string]route{path: r}}
	if s.routes != nil {
		for p, old := range s.routes.byPath {
			if p != path {
				next.byPath[p] = old
			}
		}
	}
	s.routes = next
	if s.track {
		s.dirty.routes = true
	}
}

// MovedOutSince reports whether the view's shard moved a subtree away with a commit zxid whose
// clock time (ms) is at least since.
func (v *View) MovedOutSince(since int64) bool {
	if v.routes == nil {
		return false
	}
	for _, r := range v.routes.byPath {
		if r.to != 0 && r.time >= since {
			return true
		}
	}
	return false
}

// FenceMs is how long after a move its source sends back writes issued before it (fenceMs).
const FenceMs = fenceMs

// Routes returns the view's routes in path order.
func (v *View) Routes() []Route {
	if v.routes == nil {
		return nil
	}
	out := make([]Route, 0, len(v.routes.byPath))
	for p, r := range v.routes.byPath {
		out = append(out, Route{Path: p, To: r.to, Zxid: r.zxid})
	}
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// RoutesChanged reports whether v's routes differ from those of prev (nil: none).
func (v *View) RoutesChanged(prev *View) bool {
	if prev == nil {
		return v.routes != nil
	}
	return v.routes != prev.routes
}

// ExportSubtree encodes the subtree at path (stubs included) for a move's TxnPrepare: a
// sequence of (str key, bytes node). An absent path exports nothing (an empty subtree moves
// as a mount for a path yet to be created).
func (v *View) ExportSubtree(path string) []byte {
	key, ok := keyOf(path)
	if !ok {
		return nil
	}
	var out []byte
	add := func(n *node) {
		out = appendStr(out, n.key)
		out = appendBytes(out, appendNode(nil, n))
	}
	if n := v.tree.get(key); n != nil {
		add(n)
	}
	lo, hi := subtreeRange(key)
	v.tree.nodes.AscendRange(&node{key: lo}, &node{key: hi}, func(n *node) bool {
		add(n)
		return true
	})
	return out
}

// decodeSubtree decodes an export; every key must be root's key or in its subtree.
func decodeSubtree(root string, b []byte) ([]*node, error) {
	rootKey, ok := keyOf(root)
	if !ok {
		return nil, fmt.Errorf("%w: move of %q", ErrMalformedTxn, root)
	}
	r := reader{buf: b}
	var nodes []*node
	for r.off < len(r.buf) && r.err == nil {
		key := r.str()
		val := r.bytes()
		if r.err != nil {
			break
		}
		if key != rootKey && !strings.HasPrefix(key, rootKey+"\x01") {
			return nil, fmt.Errorf("%w: exported key %q outside %q", ErrMalformedTxn, pathOf(key), root)
		}
		n, err := decodeNode(key, val)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformedTxn, err)
		}
		nodes = append(nodes, n)
	}
	if err := r.finish(); err != nil {
		return nil, fmt.Errorf("%w: subtree: %v", ErrMalformedTxn, err)
	}
	return nodes, nil
}

// prepareMove validates a move on this shard: the source must still hold the subtree (it did
// not move away); the destination must hold nothing there but, if it holds the parent, the
// subtree root's stub, and the copy must decode.
func (s *State) prepareMove(m *MoveSpec) (wire.Err, bool) {
	key, ok := keyOf(m.Path)
	if !ok || m.Path == "/" {
		return wire.ErrBadArguments, false
	}
	if !m.In {
		if s.movedAway(m.Path) {
			return ErrMoved, false
		}
		return wire.ErrOK, true
	}
	if _, err := decodeSubtree(m.Path, m.Nodes); err != nil {
		return wire.ErrMarshallingError, false
	}
	if n := s.tree.get(key); n != nil && !n.isStub() {
		return wire.ErrNodeExists, false
	}
	lo, hi := subtreeRange(key)
	clash := false
	s.tree.nodes.AscendRange(&node{key: lo}, &node{key: hi}, func(*node) bool {
		clash = true
		return false
	})
	if clash {
		return wire.ErrNodeExists, false
	}
	return wire.ErrOK, true
}

// commitMove applies a prepared move under zxid at time (see the file comment). The source
// drops every node of the subtree, keeping the root as a stub when it holds the root's parent
// (the parent's child entry, as for a mount point); the destination installs the copy, the
// copied root replacing its stub if it has one, and removes at once the ephemerals of sessions
// it has already closed (their closeSession ran here before the move, and the source applies
// its own after the move, when the nodes are gone there). Returns the events (only of such
// removals).
func (s *State) commitMove(m *MoveSpec, zxid, time int64, events []Event) []Event {
	key, _ := keyOf(m.Path)
	holdsParent := false
	if parent, ok := splitParent(m.Path); ok {
		if pk, ok := parentKey(parent); ok {
			if p := s.tree.get(pk); p != nil && !p.isStub() {
				holdsParent = true
			}
		}
	}
	t := &s.tx
	t.begin(zxid, time)
	lo, hi := subtreeRange(key)
	if !m.In {
		if n := s.tree.get(key); n != nil {
			if holdsParent {
				owner := int64(0)
				if kindOf(n.owner) == kindEphemeral {
					owner = n.owner
				}
				t.put(&node{key: key, czxid: n.czxid, mzxid: n.czxid, pzxid: n.czxid, ctime: n.ctime,
					mtime: n.ctime, owner: owner, acl: stubACL})
			} else {
				t.del(key)
			}
		}
		var under []string
		s.tree.nodes.AscendRange(&node{key: lo}, &node{key: hi}, func(n *node) bool {
			under = append(under, n.key)
			return true
		})
		for _, k := range under {
			t.del(k)
		}
		t.commit(nil)
		s.setRoute(m.Path, route{to: m.To, zxid: zxid, time: time})
		s.lastZxid = zxid
		return events
	}
	nodes, _ := decodeSubtree(m.Path, m.Nodes) // validated at prepare
	closed := map[int64]bool{}
	for _, n := range nodes {
		t.put(n)
		if kindOf(n.owner) == kindEphemeral && !n.isStub() && s.tombstones.has(n.owner) {
			closed[n.owner] = true
		}
	}
	t.commit(nil)
	s.setRoute(m.Path, route{zxid: zxid, time: time})
	s.lastZxid = zxid
	owners := make([]int64, 0, len(closed))
	for o := range closed {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	for _, o := range owners {
		t.begin(zxid, time)
		t.closeSession(o)
		events = t.commit(events)
	}
	return events
}

// Encoding of a MoveSpec inside a version-2 TxnPrepare:
//
//	str Path | uvarint To | u8 In | bytes Nodes
func (m *MoveSpec) appendTo(dst []byte) []byte {
	dst = appendStr(dst, m.Path)
	dst = binary.AppendUvarint(dst, m.To)
	dst = appendBool(dst, m.In)
	return appendBytes(dst, m.Nodes)
}

func decodeMoveSpec(r *reader) *MoveSpec {
	m := &MoveSpec{Path: r.str(), To: r.uvarint(), In: r.bool()}
	m.Nodes = r.bytes()
	return m
}

// Encoding of the routes (store key "mg", canonical state):
//
//	uvarint count | (str path, uvarint to, varint zxid, varint time)... in path order
func appendRoutes(dst []byte, rs *routes) []byte {
	var paths []string
	if rs != nil {
		for p := range rs.byPath {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	dst = binary.AppendUvarint(dst, uint64(len(paths)))
	for _, p := range paths {
		r := rs.byPath[p]
		dst = appendStr(dst, p)
		dst = binary.AppendUvarint(dst, r.to)
		dst = binary.AppendVarint(dst, r.zxid)
		dst = binary.AppendVarint(dst, r.time)
	}
	return dst
}

func decodeRoutes(b []byte) (*routes, error) {
	r := reader{buf: b}
	n := r.count(4)
	rs := &routes{byPath: make(map[string]route, n)}
	for i := 0; i < n && r.err == nil; i++ {
		p := r.str()
		rs.byPath[p] = route{to: r.uvarint(), zxid: r.varint(), time: r.varint()}
	}
	if err := r.finish(); err != nil {
		return nil, fmt.Errorf("%w: routes: %v", ErrCorruptStore, err)
	}
	if n == 0 {
		return nil, nil
	}
	return rs, nil
}

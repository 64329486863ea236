package shard

import (
	"sort"
	"unicode/utf16"
)

// javaHashSetOrder returns paths in the order ZooKeeper deletes a session's ephemerals when it
// closes the session; it fires their watch events in that order, so Corral does too.
//
// ZooKeeper 3.8.0 keeps the session's ephemerals in a java.util.HashSet<String> filled in creation
// order; closeSession's PrepRequestProcessor takes a clone of it (DataTree.getEphemerals) and puts
// the clone's iteration order into the CloseSessionTxn (new ArrayList<>(es)), which the DataTree
// then follows. A HashSet iterates its table buckets in index order and each bucket in insertion
// order (resizes keep relative order). The bucket of a string is (h ^ h>>>16) & (capacity-1) with
// h Java's String.hashCode over UTF-16 code units. The original set's capacity starts at 16 and
// doubles whenever the size exceeds three quarters of it; ZooKeeper's set never shrinks, so
// strictly it follows the largest number of ephemerals the session ever held at once (this uses
// the number it holds now, which is the same unless the session deleted many of its ephemerals
// before closing). The clone is pre-sized by HashMap.putMapEntries (Java 17:
// tableSizeFor((int)(size/0.75f + 1))) and filled in the original's iteration order, so the result
// is ordered by the clone's bucket, then the original's bucket, then creation.
func javaHashSetOrder(paths []string, czxids []int64) []string {
	type ent struct {
		path  string
		czxid int64
		hash  uint32
	}
	ents := make([]ent, len(paths))
	for i, p := range paths {
		ents[i] = ent{path: p, czxid: czxids[i], hash: javaSpread(javaStringHash(p))}
	}
	capacity := uint32(16)
	for uint32(len(ents)) > capacity/4*3 {
		capacity *= 2
	}
	clone := javaTableSizeFor(int32(float32(len(ents))/0.75 + 1))
	sort.SliceStable(ents, func(i, j int) bool {
		if ci, cj := ents[i].hash&(clone-1), ents[j].hash&(clone-1); ci != cj {
			return ci < cj
		}
		if bi, bj := ents[i].hash&(capacity-1), ents[j].hash&(capacity-1); bi != bj {
			return bi < bj
		}
		return ents[i].czxid < ents[j].czxid
	})
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.path
	}
	return out
}

// javaStringHash is java.lang.String.hashCode.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaSpread is java.util.HashMap.hash: h ^ (h >>> 16).
func javaSpread(h int32) uint32 {
	u := uint32(h)
	return u ^ (u >> 16)
}

// javaTableSizeFor is java.util.HashMap.tableSizeFor: the smallest power of two >= c (1 for c <= 1).
func javaTableSizeFor(c int32) uint32 {
	n := uint32(1)
	for int64(n) < int64(c) {
		n <<= 1
	}
	return n
}

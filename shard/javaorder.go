package shard

import (
	"sort"
	"unicode/utf16"
)

// javaHashSetOrder returns paths in the order ZooKeeper iterates a session's ephemerals when it
// closes the session: the order of a java.util.HashSet<String> filled in creation order.
// ZooKeeper deletes them (and fires their watch events) in that order, so Corral does too.
//
// A HashSet iterates its table buckets in index order and each bucket in insertion order
// (resizes keep relative order). The bucket of a string is (h ^ h>>>16) & (capacity-1) with h
// Java's String.hashCode over UTF-16 code units. The capacity starts at 16 and doubles whenever
// the size exceeds three quarters of it; ZooKeeper's set never shrinks, so strictly the capacity
// follows the largest number of ephemerals the session ever held at once. This uses the number it
// holds now, which is the same unless the session deleted many of its ephemerals before closing.
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
	sort.SliceStable(ents, func(i, j int) bool {
		bi, bj := ents[i].hash&(capacity-1), ents[j].hash&(capacity-1)
		if bi != bj {
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

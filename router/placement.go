package router

import (
	"strings"
)

// Placement says how paths without an explicit mount are spread over the data shards.
type Placement uint8

const (
	// PlaceSingle keeps every znode on the root shard (the first data shard): one Raft group
	// serves the whole tree, as before sharding.
	PlaceSingle Placement = iota
	// PlaceHash keeps "/" and "/zookeeper" on the root shard and puts every other top-level
	// znode, with its whole subtree, on the data shard chosen by hashing its name (TopLevelShard).
	// Creating or deleting such a top-level znode touches two shards (the node on its own shard,
	// the child entry in "/" on the root shard) and runs as a cross-shard transaction.
	PlaceHash
)

// ParsePlacement maps the zoo.cfg value of corral.placement to a Placement.
func ParsePlacement(s string) (Placement, bool) {
	switch s {
	case "", "hash":
		return PlaceHash, true
	case "single":
		return PlaceSingle, true
	}
	return 0, false
}

// String returns the zoo.cfg spelling.
func (p Placement) String() string {
	if p == PlaceSingle {
		return "single"
	}
	return "hash"
}

// TopLevelShard returns the data shard that holds the top-level znode name (and its subtree)
// under PlaceHash: shards[fnv32a(name) mod len(shards)], except "zookeeper", which stays on the
// root shard shards[0]. It is a pure function of its arguments, so every server (and every
// test that wants two paths on different shards) computes the same answer.
func TopLevelShard(name string, shards []uint64) uint64 {
	if name == "zookeeper" || len(shards) == 1 {
		return shards[0]
	}
	// FNV-1a, 32 bit, computed inline: this runs for every request and must not allocate.
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h ^= uint32(name[i])
		h *= 16777619
	}
	return shards[h%uint32(len(shards))]
}

// topLevelName returns the first component of an absolute path ("" for "/" and for paths that
// do not start with "/").
func topLevelName(path string) string {
	if len(path) < 2 || path[0] != '/' {
		return ""
	}
	name, _, _ := strings.Cut(path[1:], "/")
	return name
}

// IsTopLevel reports whether path names a top-level znode ("/x").
func IsTopLevel(path string) bool {
	return len(path) > 1 && path[0] == '/' && strings.IndexByte(path[1:], '/') < 0
}

// hasSequentialSuffix reports whether name ends in the ten digits of a sequential create.
func hasSequentialSuffix(name string) bool {
	if len(name) < 10 {
		return false
	}
	for _, c := range []byte(name[len(name)-10:]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// CreateShard returns the shard a create of path lands on. A sequential create at the top
// level ("/lock-" + ten digits) is decided by the root shard, which owns the parent's
// sequence counter, and its final name maps back to the root shard (Lookup).
func (r *Router) CreateShard(path string, sequential bool) *Shard {
	if r.placement == PlaceHash && sequential && IsTopLevel(r.quotaRoute(path)) {
		return r.Root() // "/x-" or, with quotas on, "/zookeeper/quota/x-" (its name maps to "/x-…")
	}
	return r.Lookup(path)
}

// MountPoint reports whether a create or delete of path is a cross-shard operation: path lives
// on another shard than its parent (a top-level znode placed off the root shard, or the root
// of an explicit mount).
func (r *Router) MountPoint(path string, sequential bool) bool {
	parent, ok := parentOf(path)
	if !ok {
		return false
	}
	return r.CreateShard(path, sequential) != r.Lookup(parent)
}

// parentOf returns the parent path of an absolute path other than "/".
func parentOf(path string) (string, bool) {
	i := strings.LastIndexByte(path, '/')
	if len(path) < 2 || path[0] != '/' || i < 0 {
		return "", false
	}
	if i == 0 {
		return "/", true
	}
	return path[:i], true
}

// ValidMount reports why path cannot be an explicit mount point ("" when it can): it must be an
// absolute path below "/", outside "/zookeeper", without empty, "." or ".." components, and its
// last component must not end in ten digits (a sequential create there is decided by the
// parent's shard and would have to land on the mount's).
func ValidMount(path string) string {
	if len(path) < 2 || path[0] != '/' || path[len(path)-1] == '/' {
		return "not an absolute znode path below /"
	}
	for _, c := range strings.Split(path[1:], "/") {
		if c == "" || c == "." || c == ".." {
			return "empty, . or .. component"
		}
	}
	if path == "/zookeeper" || strings.HasPrefix(path, "/zookeeper/") {
		return "/zookeeper stays on the root shard"
	}
	if hasSequentialSuffix(path[strings.LastIndexByte(path, '/')+1:]) {
		return "the last component ends in ten digits"
	}
	return ""
}

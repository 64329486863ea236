package router

import (
	"hash/fnv"
	"testing"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

func TestHashPlacement(t *testing.T) {
	ids := []uint64{2, 3, 4, 5}
	r := New(ids, []uint8{1, 2, 3, 4}, PlaceHash, nil)
	root := r.Root().ID
	if root != 2 {
		t.Fatalf("root shard %d, want 2", root)
	}
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/lock-0000000012", "/lock-0000000012/x"} {
		if got := r.Lookup(p).ID; got != root {
			t.Errorf("Lookup(%q) = %d, want the root shard", p, got)
		}
	}
	// A top-level name and everything below it share a shard; names spread over all shards.
	seen := map[uint64]bool{}
	for _, name := range []string{"kafka", "hbase", "solr", "a", "b", "c", "d", "e", "f", "g"} {
		want := TopLevelShard(name, ids)
		seen[want] = true
		for _, p := range []string{"/" + name, "/" + name + "/x", "/" + name + "/x/y"} {
			if got := r.Lookup(p).ID; got != want {
				t.Errorf("Lookup(%q) = %d, want %d", p, got, want)
			}
		}
	}
	if len(seen) != len(ids) {
		t.Errorf("ten names landed on %d of %d shards", len(seen), len(ids))
	}
	// A sequential create at the top level is decided by the root shard.
	if got := r.CreateShard("/lock-", true).ID; got != root {
		t.Errorf("CreateShard(/lock-, sequential) = %d, want root", got)
	}
	if r.MountPoint("/lock-", true) {
		t.Error("a top-level sequential create is not a mount point")
	}
	var off string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		if TopLevelShard(name, ids) != root {
			off = "/" + name
			break
		}
	}
	if !r.MountPoint(off, false) || r.MountPoint(off+"/x", false) {
		t.Errorf("MountPoint(%s) should be true and false below it", off)
	}
}

func TestPlanMulti(t *testing.T) {
	ids := []uint64{2, 3, 4, 5}
	r := New(ids, []uint8{1, 2, 3, 4}, PlaceHash, nil)
	var a, b string // two top-level names on two different non-root shards
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		s := TopLevelShard(name, ids)
		if s == 2 {
			continue
		}
		if a == "" {
			a = name
		} else if TopLevelShard(a, ids) != s {
			b = name
			break
		}
	}
	set := func(p string) wire.MultiOp {
		return wire.MultiOp{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: p, Version: -1}}
	}
	create := func(p string) wire.MultiOp {
		return wire.MultiOp{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: p}}
	}
	// One shard: no transaction.
	sh, roles := r.PlanMulti(&wire.MultiRequest{Ops: []wire.MultiOp{set("/" + a + "/x"), create("/" + a + "/y")}})
	if roles != nil || sh.ID != TopLevelShard(a, ids) {
		t.Fatalf("single-shard multi planned as %v on %v", roles, sh)
	}
	// Two shards.
	_, roles = r.PlanMulti(&wire.MultiRequest{Ops: []wire.MultiOp{set("/" + a + "/x"), set("/" + b + "/x")}})
	if len(roles) != 2 || roles[TopLevelShard(a, ids)][0] != shard.RoleFull || roles[TopLevelShard(b, ids)][1] != shard.RoleFull ||
		roles[TopLevelShard(a, ids)][1] != shard.RoleNone {
		t.Fatalf("two-shard multi roles %v", roles)
	}
	// A top-level create: parent side on the root, node side on its shard.
	_, roles = r.PlanMulti(&wire.MultiRequest{Ops: []wire.MultiOp{create("/" + a)}})
	if len(roles) != 2 || roles[2][0] != shard.RoleParent || roles[TopLevelShard(a, ids)][0] != shard.RoleNode {
		t.Fatalf("mount-point create roles %v", roles)
	}
}

// TestTopLevelShardIsFNV1a pins the hash: placement must never change for a given name, or a
// restarted server would look for subtrees on the wrong shards.
func TestTopLevelShardIsFNV1a(t *testing.T) {
	ids := []uint64{2, 3, 4, 5, 6, 7, 8}
	for _, name := range []string{"kafka", "hbase", "solr", "a", "bench-00", "bench-15", "ü"} {
		h := fnv.New32a()
		h.Write([]byte(name))
		if got, want := TopLevelShard(name, ids), ids[h.Sum32()%uint32(len(ids))]; got != want {
			t.Errorf("TopLevelShard(%q) = %d, want %d", name, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { TopLevelShard("kafka", ids) }); n != 0 {
		t.Errorf("TopLevelShard allocates %.0f times", n)
	}
}

func TestExplicitMounts(t *testing.T) {
	ids := []uint64{2, 3, 4, 5}
	r := New(ids, []uint8{1, 2, 3, 4}, PlaceHash, nil)
	kafka := TopLevelShard("kafka", ids)
	target := ids[0]
	for _, id := range ids {
		if id != kafka && id != ids[0] {
			target = id
			break
		}
	}
	r.SetMounts([]Mount{{Path: "/", ShardID: ids[0]}, {Path: "/kafka/brokers", ShardID: target}})
	for _, tc := range []struct {
		path string
		want uint64
	}{{"/", ids[0]}, {"/kafka", kafka}, {"/kafka/x", kafka}, {"/kafka/brokers", target}, {"/kafka/brokers/1", target},
		{"/kafka/brokersx", kafka}, {"/zookeeper", ids[0]}} {
		if got := r.Lookup(tc.path).ID; got != tc.want {
			t.Errorf("Lookup(%q) = %d, want %d", tc.path, got, tc.want)
		}
	}
	if !r.MountPoint("/kafka/brokers", false) || r.MountPoint("/kafka/brokers/1", false) || r.MountPoint("/kafka/x", false) {
		t.Error("MountPoint: only /kafka/brokers (and top-level names off the root shard) cross shards")
	}
	_, roles := r.PlanMulti(&wire.MultiRequest{Ops: []wire.MultiOp{{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: "/kafka/brokers"}}}})
	if roles[kafka][0] != shard.RoleParent || roles[target][0] != shard.RoleNode {
		t.Errorf("create of the mount point: roles %v, want parent side on %d and node side on %d", roles, kafka, target)
	}
	for _, bad := range []string{"/", "/zookeeper/x", "/a/", "/a//b", "/a/./b", "/locks/lock-0000000001", "x"} {
		if ValidMount(bad) == "" {
			t.Errorf("ValidMount(%q) accepted", bad)
		}
	}
	if why := ValidMount("/kafka/brokers"); why != "" {
		t.Errorf("ValidMount(/kafka/brokers): %s", why)
	}
}

package router

import (
	"testing"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// TestPlanWrite: where each kind of single write goes, before and after a mount changes where a
// subtree lives: a plain write to its path's shard; the create or delete of a mount point (a
// top-level name off the root shard, a mounted subtree's root) as a one-op transaction with the
// parent side on the parent's shard; a top-level sequential create on the root shard; a container
// create wrapped with the container flag, as a multi decides the node type by flags.
func TestPlanWrite(t *testing.T) {
	ids := []uint64{2, 3, 4, 5}
	r := New(ids, []uint8{1, 2, 3, 4}, PlaceHash, nil)
	var a string // a top-level name off the root shard
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if TopLevelShard(name, ids) != 2 {
			a = name
			break
		}
	}
	home := TopLevelShard(a, ids)
	other := ids[1]
	if other == home {
		other = ids[2]
	}
	create := func(p string, flags int32) *wire.CreateRequest {
		return &wire.CreateRequest{Path: p, ACL: wire.OpenACLUnsafe, Flags: flags}
	}
	type want struct {
		shard  uint64                     // a plain write's shard (0: a transaction)
		roles  map[uint64][]shard.TxnRole // a transaction's roles
		single bool
	}
	cases := []struct {
		name string
		op   wire.OpCode
		rec  wire.Record
		want want
	}{
		{"setData under a subtree", wire.OpSetData, &wire.SetDataRequest{Path: "/" + a + "/x"}, want{shard: home}},
		{"setData of a mount point", wire.OpSetData, &wire.SetDataRequest{Path: "/" + a}, want{shard: home}},
		{"create under a subtree", wire.OpCreate, create("/"+a+"/x", 0), want{shard: home}},
		{"create of a top-level name off the root", wire.OpCreate, create("/"+a, 0),
			want{roles: map[uint64][]shard.TxnRole{2: {shard.RoleParent}, home: {shard.RoleNode}}, single: true}},
		{"delete of a top-level name off the root", wire.OpDelete, &wire.DeleteRequest{Path: "/" + a},
			want{roles: map[uint64][]shard.TxnRole{2: {shard.RoleParent}, home: {shard.RoleNode}}, single: true}},
		{"top-level sequential create", wire.OpCreate, create("/lock-", wire.FlagEphemeralSequential), want{shard: 2}},
		{"create under the root shard", wire.OpCreate, create("/zookeeper/x", 0), want{shard: 2}},
	}
	check := func(t *testing.T, name string, got WritePlan, w want) {
		t.Helper()
		if w.shard != 0 {
			if got.Roles != nil || got.Shard == nil || got.Shard.ID != w.shard {
				t.Errorf("%s: planned %+v, want shard %d", name, got, w.shard)
			}
			return
		}
		if got.Shard != nil || got.Single != w.single || len(got.Roles) != len(w.roles) || len(got.Multi.Ops) != 1 {
			t.Errorf("%s: planned %+v, want the transaction %v", name, got, w.roles)
			return
		}
		for id, rs := range w.roles {
			if len(got.Roles[id]) != 1 || got.Roles[id][0] != rs[0] {
				t.Errorf("%s: roles %v, want %v", name, got.Roles, w.roles)
			}
		}
	}
	for _, c := range cases {
		check(t, c.name, r.PlanWrite(c.op, c.rec), c.want)
	}

	// A container create runs as a one-op multi that says "container" in its flags.
	p := r.PlanWrite(wire.OpCreateContainer, create("/"+a, 0))
	if p.Roles == nil || p.Multi.Ops[0].Create.Flags != wire.FlagContainer {
		t.Errorf("container create of a mount point: %+v, want a transaction with the container flag", p)
	}

	// After "/a/m" is mounted on another shard: writes under it go there, and its create or
	// delete is a transaction between the two shards.
	r.SetMounts([]Mount{{Path: "/", ShardID: 2}, {Path: "/" + a + "/m", ShardID: other}})
	check(t, "setData under a mount", r.PlanWrite(wire.OpSetData, &wire.SetDataRequest{Path: "/" + a + "/m/x"}), want{shard: other})
	check(t, "create of a mount's root", r.PlanWrite(wire.OpCreate, create("/"+a+"/m", 0)),
		want{roles: map[uint64][]shard.TxnRole{home: {shard.RoleParent}, other: {shard.RoleNode}}, single: true})
	check(t, "create beside a mount", r.PlanWrite(wire.OpCreate, create("/"+a+"/n", 0)), want{shard: home})

	// A multi on one shard is a plain write; over two, a transaction that is not Single.
	m := &wire.MultiRequest{Ops: []wire.MultiOp{{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: "/" + a + "/x"}}}}
	check(t, "one-shard multi", r.PlanWrite(wire.OpMulti, m), want{shard: home})
	m.Ops = append(m.Ops, wire.MultiOp{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: "/" + a + "/m/x"}})
	if p := r.PlanWrite(wire.OpMulti, m); p.Roles == nil || p.Single || len(p.Multi.Ops) != 2 {
		t.Errorf("two-shard multi: %+v, want a transaction of both ops", p)
	}
}

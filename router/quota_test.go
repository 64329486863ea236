package router

import (
	"testing"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// TestQuotaPlacement: with quotas on, /zookeeper/quota/<p>/... lives where <p> lives (mount
// points included); "/zookeeper/quota" itself, the quota of "/", and everything before the
// format level stay on the root shard.
func TestQuotaPlacement(t *testing.T) {
	ids := []uint64{2, 3, 4, 5}
	r := New(ids, []uint8{1, 2, 3, 4}, PlaceHash, nil)
	r.SetMounts([]Mount{{Path: "/", ShardID: 2}, {Path: "/kafka/brokers", ShardID: 5}})
	mode := shard.QuotaOff
	r.SetQuotaMode(func() shard.QuotaMode { return mode })
	root := r.Root().ID
	for _, p := range []string{"/zookeeper/quota/kafka", "/zookeeper/quota/kafka/zookeeper_limits"} {
		if got := r.Lookup(p).ID; got != root {
			t.Errorf("below the level: Lookup(%q) = %d, want the root shard", p, got)
		}
	}
	mode = shard.QuotaCount
	for p, target := range map[string]string{
		"/zookeeper/quota/kafka":                           "/kafka",
		"/zookeeper/quota/kafka/zookeeper_stats":           "/kafka",
		"/zookeeper/quota/kafka/brokers":                   "/kafka/brokers",
		"/zookeeper/quota/kafka/brokers/1/zookeeper_stats": "/kafka/brokers",
		"/zookeeper/quota/solr/a/b":                        "/solr",
		"/zookeeper/quota/zookeeper/zookeeper_limits":      "/zookeeper",
		"/zookeeper/quota":                                 "/zookeeper",
		"/zookeeper/quota/zookeeper_limits":                "/zookeeper",
		"/zookeeper/quotax/a":                              "/zookeeper",
	} {
		if got, want := r.Lookup(p).ID, r.Lookup(target).ID; got != want {
			t.Errorf("Lookup(%q) = %d, want %d (the shard of %s)", p, got, want, target)
		}
	}
	// Creating /zookeeper/quota/kafka is a mount point create (the root holds the parent);
	// a sequential create directly below /zookeeper/quota is decided by the root shard.
	if !r.MountPoint("/zookeeper/quota/kafka", false) && r.Lookup("/kafka").ID != root {
		t.Errorf("/zookeeper/quota/kafka is not a mount point")
	}
	if got := r.CreateShard("/zookeeper/quota/lock-", true).ID; got != root {
		t.Errorf("CreateShard(/zookeeper/quota/lock-, sequential) = %d, want root", got)
	}
	if got, want := r.MountPoint("/zookeeper/quota/kafka/brokers", false), r.Lookup("/kafka").ID != 5; got != want {
		t.Errorf("MountPoint(/zookeeper/quota/kafka/brokers) = %v, want %v", got, want)
	}

	// A node the root shard holds at /zookeeper/quota/<top> (written before the level) keeps
	// <top>'s quota paths on the root shard; a stub there does not.
	name := "kafka"
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		if TopLevelShard(n, ids) != root {
			name = n
		}
	}
	st := shard.NewState(shard.StateConfig{Tag: 1, OwnsRoot: true})
	b := &shard.Batch{Proposer: 1, Seq: 1, Time: 1, Ops: []shard.Op{{Code: wire.OpCreate,
		Body: encodeCreate("/zookeeper/quota/" + name)}}}
	if res, _ := st.Apply(b); res.Results[0].Err != wire.ErrOK {
		t.Fatal(res.Results[0].Err)
	}
	if got := r.Lookup("/zookeeper/quota/" + name + "/zookeeper_limits").ID; got == root {
		t.Fatalf("without a root view the quota path of /%s is on the root shard", name)
	}
	r.Root().publish(st.View(root), nil)
	if got := r.Lookup("/zookeeper/quota/" + name + "/zookeeper_limits").ID; got != root {
		t.Errorf("a legacy quota node of /%s: Lookup = %d, want the root shard", name, got)
	}
}

func encodeCreate(path string) []byte {
	e := wire.NewEncoder(nil)
	(&wire.CreateRequest{Path: path, ACL: wire.OpenACLUnsafe}).Encode(e)
	return e.Bytes()
}

package shard

import (
	"testing"

	"github.com/corral/corral/wire"
)

func opSetStat(st SetStat) Op {
	return Op{Code: OpSetStat, Body: SetStatBody(&st), MinZxid: st.MaxZxid()}
}

// TestSetStatOverwritesTheStat is setstat.go's contract: every stat field an import carries is
// set verbatim, the fields that follow from the tree are not, the next sequential child is
// named after the stored cversion, the shard's clock stays above the zxids it set, and a
// missing node, a stub or impossible values change nothing.
func TestSetStatOverwritesTheStat(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	for i, op := range []Op{opCreate("/q", []byte("x"), 0), opCreate("/q/a", nil, 0)} {
		if res, _ := s.Apply(batch(1, uint64(i+1), 1000, op)); res.Results[0].Err != wire.ErrOK {
			t.Fatalf("setup %d: %v", i, res.Results[0].Err)
		}
	}
	// A zxid far above the shard's clock, as a restore from a backup of a faster clock brings.
	high := nextZxid(s.lastZxid, 3, 1<<40, 0)
	st := SetStat{Path: "/q", Czxid: 0x100000002, Mzxid: 0x100000009, Pzxid: high, Ctime: 11, Mtime: 22,
		Version: 5, Aversion: 2, Cversion: 41}
	res, events := s.Apply(batch(1, 3, 1001, opSetStat(st)))
	if r := res.Results[0]; r.Err != wire.ErrOK || r.Zxid <= high {
		t.Fatalf("setStat: %v, zxid %x (want above %x)", r.Err, r.Zxid, high)
	}
	if len(events) != 0 {
		t.Fatalf("setStat fired events: %v", events)
	}
	n, _ := s.View(1).Get("/q")
	got := n.Stat()
	want := wire.Stat{Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid, Ctime: 11, Mtime: 22, Version: 5,
		Aversion: 2, Cversion: 41*2 - 1, DataLength: 1, NumChildren: 1}
	if got != want || string(n.Data()) != "x" {
		t.Fatalf("stat %+v data %q, want %+v \"x\"", got, n.Data(), want)
	}
	// The next sequential child is named after the stored cversion, as in ZooKeeper.
	res, _ = s.Apply(batch(1, 4, 1002, opCreate2("/q/item-", nil, wire.FlagPersistentSequential)))
	if r := res.Results[0]; r.Err != wire.ErrOK {
		t.Fatalf("sequential create: %v", r.Err)
	}
	if _, ok := s.View(1).Get("/q/item-0000000041"); !ok {
		t.Fatal("the sequential child after setStat is not /q/item-0000000041")
	}
	for i, bad := range []SetStat{
		{Path: "/missing", Version: 1, Cversion: 1},
		{Path: "/q", Version: -1, Cversion: 50},
		{Path: "/q", Version: 1, Cversion: 1}, // below the 2 children
		{Path: "q", Version: 1},
	} {
		res, _ := s.Apply(batch(1, uint64(5+i), 1003, opSetStat(bad)))
		if res.Results[0].Err == wire.ErrOK {
			t.Errorf("bad setStat %d (%+v) applied", i, bad)
		}
	}
	if n, _ := s.View(1).Get("/q"); n.Stat().Version != 5 {
		t.Fatalf("a refused setStat changed /q: %+v", n.Stat())
	}
	res, _ = s.Apply(batch(1, 9, 1004, Op{Code: OpSetStat, Body: []byte{0xff}}))
	if res.Results[0].Err != wire.ErrMarshallingError {
		t.Fatalf("undecodable body: %v", res.Results[0].Err)
	}
}

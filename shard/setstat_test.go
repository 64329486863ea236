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

// TestSetStatRootAndClock: the root flag (format level 6, LevelCut) lets a restore give "/" a stored
// cversion one below its child count (/zookeeper was never created), which without the flag is
// refused; the flag on another path is malformed. An OpSetStat of no znode (ClockBody) changes
// nothing, fails, and moves the clock past its MinZxid.
func TestSetStatRootAndClock(t *testing.T) {
	s := NewState(StateConfig{Tag: 1, OwnsRoot: true})
	if res, _ := s.Apply(batch(1, 1, 1000, opCreate("/a", nil, 0))); res.Results[0].Err != wire.ErrOK {
		t.Fatalf("setup: %v", res.Results[0].Err)
	}
	seq := uint64(2)
	apply := func(op Op) OpResult {
		t.Helper()
		res, _ := s.Apply(batch(1, seq, 1001, op))
		seq++
		return res.Results[0]
	}
	root := SetStat{Path: "/", Pzxid: 0x5501, Cversion: 1} // two children, one creation counted
	if r := apply(opSetStat(root)); r.Err != wire.ErrBadArguments {
		t.Fatalf("root stat without the flag: %v", r.Err)
	}
	root.Root = true
	if r := apply(opSetStat(root)); r.Err != wire.ErrOK {
		t.Fatalf("root stat with the flag: %v", r.Err)
	}
	if n, _ := s.View(1).Get("/"); n.Stat().Pzxid != 0x5501 || n.StoredCversion() != 1 {
		t.Fatalf("root stat: %+v", n.Stat())
	}
	if r := apply(opSetStat(SetStat{Path: "/a", Root: true})); r.Err != wire.ErrMarshallingError {
		t.Fatalf("root flag on /a: %v", r.Err)
	}
	high := nextZxid(s.lastZxid, 7, 1<<41, 0)
	r := apply(Op{Code: OpSetStat, Body: ClockBody(), MinZxid: high})
	if r.Err != wire.ErrBadArguments || r.Zxid <= high || s.lastZxid != r.Zxid {
		t.Fatalf("clock op: %v, zxid %x, want above %x", r.Err, r.Zxid, high)
	}
	if n, _ := s.View(1).Get("/a"); n.Stat().Mzxid > high {
		t.Fatal("the clock op changed a znode")
	}
}

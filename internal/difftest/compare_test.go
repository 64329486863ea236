package difftest_test

import (
	"strings"
	"testing"

	"github.com/corral/corral/internal/difftest"
)

// stat builds a stat whose zxids and times are shifted by off, so that the
// "same" history looks different on the two sides, as it does between two
// real servers.
func stat(off int64, czxid, mzxid, pzxid int64, ctime, mtime int64, owner int64) *difftest.Stat {
	s := &difftest.Stat{
		Czxid: czxid + off, Mzxid: mzxid + off, Pzxid: pzxid + off,
		Ctime: ctime + off*1000, Mtime: mtime + off*1000,
		Version: 1, Cversion: 2, Aversion: 0, DataLength: 3, NumChildren: 1,
	}
	if owner != 0 {
		s.EphemeralOwner = owner + off
	}
	return s
}

func yes() *bool { t := true; return &t }

// history is a plausible sequence of results on one side; off shifts every
// zxid, time and session id.
func history(off int64) []difftest.Result {
	return []difftest.Result{
		{Path: "/d", Stat: stat(off, 10, 10, 10, 5000, 5000, 0)},
		{Data: []byte("abc"), Stat: stat(off, 10, 12, 11, 5000, 5003, 0)},
		{Children: []string{"b", "a"}, Stat: stat(off, 10, 12, 13, 5000, 5003, 0)},
		{Exists: yes(), Stat: stat(off, 14, 14, 14, 5007, 5007, 77)},
		{ACL: difftest.WorldACL(difftest.PermAll), Stat: stat(off, 10, 12, 13, 5000, 5003, 0)},
		{Err: "BADVERSION", Multi: []difftest.Result{{}, {Err: "BADVERSION"}, {Err: "RUNTIMEINCONSISTENCY"}}},
		{Events: []difftest.Event{{Type: difftest.EventNodeCreated, Path: "/d/a"}, {Type: difftest.EventNodeChildrenChanged, Path: "/d"}}},
		{Zxid: 20 + off, Session: 77 + off},
	}
}

// feed compares the oracle history with a candidate history, tampering with
// candidate result at step `at` (if tamper is set); it returns the first diff.
func feed(t *testing.T, at int, tamper func(*difftest.Result)) (int, *difftest.Diff) {
	t.Helper()
	c := difftest.NewComparator()
	if err := c.PairSessions(77, 77+1000); err != nil {
		t.Fatalf("pair sessions: %v", err)
	}
	o, k := history(0), history(1000)
	for i := range o {
		if i == at && tamper != nil {
			tamper(&k[i])
		}
		if d := c.Compare("step", o[i], k[i]); d != nil {
			return i, d
		}
	}
	return -1, nil
}

func TestComparatorAcceptsNormalisedDifferences(t *testing.T) {
	// Different zxids, times and session ids, children in another order:
	// all normalised away.
	if i, d := feed(t, -1, nil); d != nil {
		t.Fatalf("step %d: unexpected diff %v", i, d)
	}
	// A millisecond collision on one side only (ctime == mtime although
	// the node was modified) is not a difference.
	c := difftest.NewComparator()
	o := difftest.Result{Stat: stat(0, 10, 12, 10, 5000, 5003, 0)}
	k := difftest.Result{Stat: stat(1000, 10, 12, 10, 5000, 5000, 0)}
	if d := c.Compare("collision", o, k); d != nil {
		t.Fatalf("ms collision reported: %v", d)
	}
}

func TestComparatorCatchesTampering(t *testing.T) {
	for _, tc := range []struct {
		name   string
		at     int
		tamper func(*difftest.Result)
		field  string
	}{
		{"error code", 1, func(r *difftest.Result) { r.Err = "NONODE" }, "err"},
		{"created path", 0, func(r *difftest.Result) { r.Path = "/d0000000001" }, "path"},
		{"data bytes", 1, func(r *difftest.Result) { r.Data = []byte("abd") }, "data"},
		{"null vs empty data", 1, func(r *difftest.Result) { r.Data = []byte{} }, "data"},
		{"children", 2, func(r *difftest.Result) { r.Children = []string{"a"} }, "children"},
		{"exists flag", 3, func(r *difftest.Result) { f := false; r.Exists = &f }, "exists"},
		{"acl", 4, func(r *difftest.Result) { r.ACL = difftest.WorldACL(difftest.PermRead) }, "acl"},
		{"version", 1, func(r *difftest.Result) { r.Stat.Version++ }, "stat.version"},
		{"cversion", 2, func(r *difftest.Result) { r.Stat.Cversion-- }, "stat.cversion"},
		{"aversion", 4, func(r *difftest.Result) { r.Stat.Aversion = 5 }, "stat.aversion"},
		{"dataLength", 1, func(r *difftest.Result) { r.Stat.DataLength = 4 }, "stat.dataLength"},
		{"numChildren", 2, func(r *difftest.Result) { r.Stat.NumChildren = 2 }, "stat.numChildren"},
		{"missing stat", 3, func(r *difftest.Result) { r.Stat = nil }, "stat"},
		// Candidate reuses the zxid it gave /d's creation for its pzxid
		// while the oracle has a newer one: the bijection breaks.
		{"zxid mapping", 2, func(r *difftest.Result) { r.Stat.Pzxid = 1010 }, "stat.pzxid"},
		// Candidate's new zxid sorts before one it used earlier while the
		// oracle's sorts after: order not preserved.
		{"zxid order", 3, func(r *difftest.Result) { r.Stat.Czxid, r.Stat.Mzxid, r.Stat.Pzxid = 1005, 1005, 1005 }, "stat.czxid"},
		{"zero zxid", 7, func(r *difftest.Result) { r.Zxid = 0 }, "zxid"},
		// Owner is a session the candidate never paired with the oracle's.
		{"ephemeral owner", 3, func(r *difftest.Result) { r.Stat.EphemeralOwner = 5 }, "stat.ephemeralOwner"},
		{"owner vs persistent", 0, func(r *difftest.Result) { r.Stat.EphemeralOwner = 1077 }, "stat.ephemeralOwner"},
		// An unmodified node whose ctime != mtime: one txn has one time.
		{"ctime != mtime", 3, func(r *difftest.Result) { r.Stat.Mtime++ }, "stat.mtime"},
		// Same zxid seen with two different times.
		{"time per zxid", 2, func(r *difftest.Result) { r.Stat.Ctime += 7 }, "stat.ctime"},
		// A later zxid with an earlier time.
		{"time backwards", 3, func(r *difftest.Result) { r.Stat.Ctime, r.Stat.Mtime = 5001+1000*1000-2000, 5001+1000*1000-2000 }, "stat.ctime"},
		{"multi op result", 5, func(r *difftest.Result) { r.Multi[2].Err = "" }, "multi[2].err"},
		{"multi length", 5, func(r *difftest.Result) { r.Multi = r.Multi[:2] }, "multi"},
		{"event order", 6, func(r *difftest.Result) { r.Events[0], r.Events[1] = r.Events[1], r.Events[0] }, "events"},
		{"event type", 6, func(r *difftest.Result) { r.Events[0].Type = difftest.EventNodeDataChanged }, "events"},
		{"missing event", 6, func(r *difftest.Result) { r.Events = r.Events[:1] }, "events"},
		{"raw session", 7, func(r *difftest.Result) { r.Session = 999 }, "session"},
		{"raw values", 7, func(r *difftest.Result) { r.Values = []string{"x"} }, "values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, d := feed(t, tc.at, tc.tamper)
			if d == nil {
				t.Fatalf("tampered %s at step %d was not caught", tc.name, tc.at)
			}
			if i != tc.at || d.Field != tc.field {
				t.Fatalf("caught at step %d field %q (%s), want step %d field %q", i, d.Field, d.Reason, tc.at, tc.field)
			}
			if d.Reason == "" || !strings.Contains(d.Error(), tc.field) {
				t.Fatalf("unhelpful diff: %v", d)
			}
		})
	}
}

func TestPairSessionsIsABijection(t *testing.T) {
	c := difftest.NewComparator()
	if err := c.PairSessions(1, 101); err != nil {
		t.Fatal(err)
	}
	if err := c.PairSessions(1, 101); err != nil {
		t.Fatalf("re-pairing the same sessions: %v", err)
	}
	if err := c.PairSessions(2, 101); err == nil {
		t.Fatalf("two oracle sessions paired with one candidate session")
	}
	if err := c.PairSessions(1, 102); err == nil {
		t.Fatalf("one oracle session paired with two candidate sessions")
	}
}

func TestReportNamesStepAndResults(t *testing.T) {
	rep := &difftest.Report{
		Script: "random-7", Seed: 7, NumSteps: 50, Prefix: "/difftest-x", Oracle: "zk", Candidate: "corral",
		Executed: 13,
		Mismatch: &difftest.Mismatch{
			Step: 12, Op: `c0 setData "/d/a" "x" v=1`,
			Diff:      difftest.Diff{Field: "stat.version", Reason: "2 vs 3"},
			Oracle:    difftest.Result{Stat: &difftest.Stat{Version: 2}},
			Candidate: difftest.Result{Stat: &difftest.Stat{Version: 3}},
		},
		Recent: []difftest.StepRecord{{Index: 11, Step: `c0 create "/d/a"`, Oracle: difftest.Result{Path: "/d/a"}}},
	}
	s := rep.String()
	for _, want := range []string{"step 12", `setData "/d/a"`, "stat.version", "v=2", "v=3", "RandomScript(7, 50)", "corral", `11 c0 create "/d/a" => path="/d/a"`} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

package faulttest

import (
	"strings"
	"testing"

	"github.com/corral/corral/internal/linearize"
)

// TestRobustCheckersCatch feeds the robustness suite's history checkers histories with the
// violations they look for, and clean ones: each check must be able to fail.
func TestRobustCheckersCatch(t *testing.T) {
	read := func(p, data string, v int32) linearize.Op {
		return linearize.Op{Input: linearize.Input{Kind: linearize.Get, Path: p},
			Output: linearize.Output{Result: linearize.OK, Data: data, Version: v}}
	}
	set := func(p, data string, v int32) linearize.Op {
		return linearize.Op{Input: linearize.Input{Kind: linearize.Set, Path: p, Data: data},
			Output: linearize.Output{Result: linearize.OK, Version: v}}
	}
	create := func(p, data string) linearize.Op {
		return linearize.Op{Input: linearize.Input{Kind: linearize.Create, Path: p, Data: data},
			Output: linearize.Output{Result: linearize.OK}}
	}
	lost := func(p, data string) linearize.Op { // unknown outcome: says nothing
		return linearize.Op{Input: linearize.Input{Kind: linearize.Set, Path: p, Data: data},
			Output: linearize.Output{Result: linearize.Unknown}}
	}
	const res, key = "/res", "/watch"
	for i, tc := range []struct {
		h    linearize.History
		want []string // substrings of the violations, in order; none: clean
	}{
		0: {h: linearize.History{create(res, "t0-init"), set(res, "t3-c1-1", 1), read(res, "t3-c1-1", 1), set(res, "t3-c1-2", 2),
			lost(res, "t9-c2-3"), set(res, "t5-c2-4", 3), read(res, "t5-c2-4", 3)}},
		1: {h: linearize.History{create(res, "t0-init"), set(res, "t5-c1-1", 1), set(res, "t3-c2-2", 2)},
			want: []string{"token went back"}},
		2: {h: linearize.History{create(res, "t0-init"), set(res, "t3-c1-1", 1), read(res, "t4-c2-2", 2), set(res, "t3-c1-3", 3)},
			want: []string{"token went back", "interleave"}},
		3: {h: linearize.History{create(res, "t0-init"), set(res, "t3-c1-1", 1), set(res, "t4-c2-2", 1)},
			want: []string{"holds \"t3-c1-1\" and \"t4-c2-2\""}},
		4: {h: linearize.History{create(key, "w0"), set(key, "w1", 1), read(key, "w1", 1), lost(key, "w2"), set(key, "w3", 2)}},
		5: {h: linearize.History{create(key, "w0"), set(key, "w2", 1), read(key, "w1", 2)},
			want: []string{"out of order"}},
	} {
		var got []string
		if i < 4 {
			got, _, _ = lockViolations(tc.h, res)
		} else {
			got = writeOrderViolations(tc.h, key)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%d: violations %q, want %d matching %q", i, got, len(tc.want), tc.want)
			continue
		}
		for j, w := range tc.want {
			if !strings.Contains(got[j], w) {
				t.Errorf("%d: violation %q, want it to mention %q", i, got[j], w)
			}
		}
	}
}

// TestRobustPipeCheckerCatches feeds the pipe checker (robust_pipe_test.go) what it looks for:
// a lost acknowledged create, a gap in a session's prefix, a create never sent; and a clean
// session whose unacknowledged tail did not apply.
func TestRobustPipeCheckerCatches(t *testing.T) {
	p := &rbPipe{id: 7, subs: []string{"a", "b"}}
	p.sessions = []*rbPipeSession{
		{n: 0, sent: 6, acked: map[int]bool{0: true, 1: true, 2: true}}, // clean: 0-3 applied, 4-5 not
		{n: 1, sent: 5, acked: map[int]bool{0: true, 1: true}},          // 1 lost, 3 applied after the gap
		{n: 5, sent: 2, acked: map[int]bool{}},                          // 4 never sent (sessions 2-4: dials failed)
	}
	applied := map[string]map[int]bool{
		"7-0": {0: true, 1: true, 2: true, 3: true},
		"7-1": {0: true, 3: true},
		"7-5": {4: true},
	}
	got, acked, sessions, gaps := p.violations(applied)
	want := []string{
		"session 1: /b/p7-1-1 is missing but the later /b/p7-1-3 applied",
		"session 1: acknowledged create /b/p7-1-1 is missing",
		"session 5: /a/p7-5-4 exists but was never sent",
		"session 5: /a/p7-5-0 is missing but the later /a/p7-5-4 applied",
	}
	if acked != 5 || sessions != 3 || gaps != 2 || len(got) != len(want) {
		t.Fatalf("violations %q (acked %d, sessions %d, gaps %d), want %d", got, acked, sessions, gaps, len(want))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no violation mentions %q: %q", w, got)
		}
	}
}

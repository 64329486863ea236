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

package bench

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestHistPercentiles(t *testing.T) {
	h := NewHist()
	// 1..1000 ms, one value each: p50 ≈ 500 ms, p99 ≈ 990 ms, p99.9 ≈ 999 ms.
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	s := h.Summary()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"p50", s.P50Ms, 500}, {"p99", s.P99Ms, 990}, {"p999", s.P999Ms, 999},
		{"max", s.MaxMs, 1000}, {"mean", s.MeanMs, 500.5},
	} {
		if math.Abs(c.got-c.want)/c.want > 0.002 { // 3 significant digits
			t.Errorf("%s = %.3f, want %.3f ±0.2%%", c.name, c.got, c.want)
		}
	}
	if s.Count != 1000 {
		t.Errorf("count %d", s.Count)
	}
	// Merge and clamping.
	o := NewHist()
	o.Record(0)
	o.Record(time.Hour)
	h.Merge(o)
	if h.Count() != 1002 {
		t.Errorf("merged count %d", h.Count())
	}
	if s := h.Summary(); s.MaxMs < 59_000 || s.MaxMs > 60_100 {
		t.Errorf("clamped max %.0f ms, want 60 s", s.MaxMs)
	}
	if (NewHist().Summary() != Summary{}) {
		t.Error("empty histogram summary not zero")
	}
}

func TestTimeline(t *testing.T) {
	tl := NewTimeline(100*time.Millisecond, 10)
	for i := 0; i < 10; i++ { // 10 per bucket → 100 ops/s
		for j := 0; j < 10; j++ {
			tl.Add(time.Duration(i)*100*time.Millisecond + time.Duration(j)*time.Millisecond)
		}
	}
	tl.Add(-time.Millisecond) // dropped
	tl.Add(time.Second)       // past the end: dropped
	for i, r := range tl.Rates() {
		if r != 100 {
			t.Fatalf("bucket %d rate %v", i, r)
		}
	}
	if got := tl.Sum(200*time.Millisecond, 500*time.Millisecond); got != 30 {
		t.Errorf("Sum = %d", got)
	}
	if got := tl.Mean(0, time.Second); got != 100 {
		t.Errorf("Mean = %v", got)
	}
	o := NewTimeline(100*time.Millisecond, 12)
	o.Counts[11] = 5
	tl.Merge(o)
	if len(tl.Counts) != 12 || tl.Counts[11] != 5 || tl.Counts[0] != 10 {
		t.Errorf("Merge: %v", tl.Counts)
	}
}

func TestTimelineOutage(t *testing.T) {
	tl := NewTimeline(100*time.Millisecond, 30)
	for i := range tl.Counts {
		tl.Counts[i] = 100 // 1000 ops/s
	}
	// event at 1.0 s: 0.3 s of nothing, then 0.2 s at a quarter, then back
	tl.Counts[10], tl.Counts[11], tl.Counts[12] = 0, 0, 0
	tl.Counts[13], tl.Counts[14] = 25, 25
	o := tl.OutageAfter(time.Second, time.Second, 1000, 0.5)
	if o.Zero != 300*time.Millisecond || o.Below != 500*time.Millisecond || o.MinRate != 0 ||
		o.Recovery != 500*time.Millisecond {
		t.Fatalf("outage %+v", o)
	}
	if o := tl.OutageAfter(2*time.Second, time.Second, 1000, 0.5); o.Below != 0 || o.Zero != 0 || o.MinRate != 1000 {
		t.Fatalf("no outage expected: %+v", o)
	}
	// a dip that lasts past the window: not recovered (-1), not "recovered at once" (0)
	for i := 20; i < 30; i++ {
		tl.Counts[i] = 10
	}
	if o := tl.OutageAfter(2*time.Second, 500*time.Millisecond, 1000, 0.5); o.Below != 500*time.Millisecond || o.Recovery != -1 {
		t.Fatalf("lasting dip: %+v", o)
	}
}

func TestRecommend(t *testing.T) {
	req := Requirement{TargetOps: 10000, P99: 20 * time.Millisecond, Tolerance: 0.05, MinServers: 3}
	pts := []SizingPoint{
		{Target: "corral", Servers: 5, Shards: 1, AchievedOps: 10000, P99Ms: 5, CapacityOps: 30000},
		{Target: "corral", Servers: 3, Shards: 4, AchievedOps: 9600, P99Ms: 19, CapacityOps: 20000}, // within tolerance
		{Target: "corral", Servers: 3, Shards: 2, AchievedOps: 10000, P99Ms: 25},                    // p99 too high
		{Target: "corral", Servers: 3, Shards: 8, AchievedOps: 10000, P99Ms: 4, CapacityOps: 50000},
		{Target: "corral", Servers: 1, Shards: 1, AchievedOps: 10000, P99Ms: 1}, // below minimum size
		{Target: "zookeeper", Servers: 3, Shards: 1, AchievedOps: 7000, P99Ms: 10, CapacityOps: 7100},
		{Target: "zookeeper", Servers: 5, Shards: 1, AchievedOps: 6000, P99Ms: 30},
		{Target: "zookeeper", Servers: 7, Shards: 1, Err: "did not start"},
	}
	recs := Recommend(pts, req)
	if len(recs) != 2 || recs[0].Target != "corral" || recs[1].Target != "zookeeper" {
		t.Fatalf("targets %+v", recs)
	}
	c := recs[0]
	if !c.Found || c.Best.Servers != 3 || c.Best.Shards != 4 {
		t.Fatalf("corral: %+v", c)
	}
	if len(c.Verdicts) != 5 || c.Verdicts[0].Point.Servers != 1 || c.Verdicts[0].Meets {
		t.Fatalf("verdicts not sorted by size: %+v", c.Verdicts)
	}
	z := recs[1]
	if z.Found || z.Best.Servers != 3 || !strings.Contains(z.Reason, "no configuration meets") {
		t.Fatalf("zookeeper: %+v", z)
	}
	// Nothing within the latency bound: the closest miss is the lowest p99.
	r := Recommend([]SizingPoint{
		{Target: "x", Servers: 3, Shards: 1, AchievedOps: 1, P99Ms: 50},
		{Target: "x", Servers: 5, Shards: 1, AchievedOps: 1, P99Ms: 40},
	}, req)
	if r[0].Found || r[0].Best.Servers != 5 {
		t.Fatalf("lowest-p99 miss: %+v", r[0])
	}
	// Everything failed.
	r = Recommend([]SizingPoint{{Target: "x", Servers: 3, Err: "boom"}}, req)
	if r[0].Found || !strings.Contains(r[0].Reason, "no configuration was measured") {
		t.Fatalf("all failed: %+v", r[0])
	}
	// Equal size: more headroom wins.
	r = Recommend([]SizingPoint{
		{Target: "x", Servers: 3, Shards: 2, AchievedOps: 10000, P99Ms: 1, CapacityOps: 11000},
		{Target: "x", Servers: 3, Shards: 2, AchievedOps: 10000, P99Ms: 1, CapacityOps: 15000},
	}, req)
	if r[0].Best.CapacityOps != 15000 {
		t.Fatalf("headroom tie-break: %+v", r[0].Best)
	}
}

func TestSeriesByTargetGroupsInFirstSeenOrder(t *testing.T) {
	type pt struct {
		target string
		x, y   float64
	}
	got := seriesByTarget([]pt{{"zookeeper", 1, 10}, {"corral", 1, 20}, {"zookeeper", 2, 11}},
		func(p pt) (string, int, float64, float64) { return p.target, 3, p.x, p.y })
	if len(got) != 2 || got[0].target != "zookeeper" || got[1].target != "corral" {
		t.Fatalf("series %+v", got)
	}
	if !got[0].dashed || got[1].dashed || got[0].name != "zookeeper, 3 servers" {
		t.Fatalf("styles %+v", got)
	}
	if len(got[0].xs) != 2 || got[0].ys[1] != 11 || len(got[1].xs) != 1 {
		t.Fatalf("points %+v", got)
	}
}

func TestLongestZeroRun(t *testing.T) {
	for _, tc := range []struct {
		rates     []float64
		from      int
		wantN, at int
	}{
		{[]float64{5, 0, 0, 3, 0, 0, 0, 4}, 0, 3, 4},
		{[]float64{0, 0, 0, 1, 0, 2}, 3, 1, 4}, // zeros before from do not count
		{[]float64{1, 2, 3}, 0, 0, 0},
		{[]float64{1, 0, 0}, 0, 2, 1}, // a run at the end
	} {
		if n, at := longestZeroRun(tc.rates, tc.from); n != tc.wantN || (n > 0 && at != tc.at) {
			t.Errorf("longestZeroRun(%v, %d) = %d at %d, want %d at %d", tc.rates, tc.from, n, at, tc.wantN, tc.at)
		}
	}
}

// TestProbeDisk checks that the disk probe measures real synchronous writes (each takes some
// time, the files are gone afterwards) and that the summary line names both medians.
func TestProbeDisk(t *testing.T) {
	dir := t.TempDir()
	p, err := probeDisk(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.Alone <= 0 || p.Shared <= 0 {
		t.Fatalf("probe %+v: want positive medians", p)
	}
	left, err := os.ReadDir(dir)
	if err != nil || len(left) != 0 {
		t.Fatalf("probe left %v (%v) in its directory", left, err)
	}
	s := p.String()
	for _, want := range []string{fmtMs(p.Alone), fmtMs(p.Shared), "3 writers"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q lacks %q", s, want)
		}
	}
	if got := medianDuration([]time.Duration{3, 1, 2}); got != 2 {
		t.Errorf("medianDuration = %v, want 2", got)
	}
}

// TestHistJSONMergesExactly: a histogram sent as JSON (a floor node's latencies) comes back with
// every recorded value, so merging the copies gives the summary of merging the originals.
func TestHistJSONMergesExactly(t *testing.T) {
	a, b := NewHist(), NewHist()
	for i := 1; i <= 1000; i++ {
		a.Record(time.Duration(i) * 7 * time.Microsecond)
		b.Record(time.Duration(i*i) * time.Microsecond)
	}
	want := NewHist()
	want.Merge(a)
	want.Merge(b)
	got := NewHist()
	for _, h := range []*Hist{a, b} {
		raw, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var back Hist
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		got.Merge(&back)
	}
	if g, w := got.Summary(), want.Summary(); g != w {
		t.Fatalf("merged from JSON: %+v, want %+v", g, w)
	}
}

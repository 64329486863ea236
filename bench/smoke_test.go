package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/corralproc"
)

// smokeCase is one experiment run in --short mode and the CSV column that must be positive in
// every row.
type smokeCase struct {
	exp    string
	args   []string
	csv    string
	column string
	png    string // "" when the experiment draws no figure
}

var smokeCases = []smokeCase{
	{"throughput", nil, "throughput.csv", "ops_per_s", "throughput.png"},
	{"failover", nil, "failover.csv", "", "failover.png"},
	{"create", nil, "create.csv", "creates_per_s", "create.png"},
	{"barrier", nil, "barrier.csv", "barriers_per_s", "barrier.png"},
	{"shards", nil, "shards.csv", "writes_per_s", "shards.png"},
	{"sizing", []string{"--sizes", "1"}, "sizing.csv", "capacity_ops", "sizing.png"},
}

// runSmoke runs one experiment against target and checks its outputs: exit code 0, a
// non-empty CSV whose column is > 0 in every row, a PNG, and a summary. It returns the CSV rows.
func runSmoke(t *testing.T, target string, sc smokeCase) [][]string {
	t.Helper()
	out := t.TempDir()
	args := append([]string{sc.exp, "--target", target, "--short", "--quiet", "--out", out}, sc.args...)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if code := MainContext(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("corral bench %s: exit %d\nstderr:\n%s", strings.Join(args, " "), code, stderr.String())
	}
	rows := readCSV(t, filepath.Join(out, sc.csv))
	if len(rows) < 2 {
		t.Fatalf("%s has no data rows", sc.csv)
	}
	if sc.column != "" {
		col := -1
		for i, h := range rows[0] {
			if h == sc.column {
				col = i
			}
		}
		if col < 0 {
			t.Fatalf("%s has no column %s: %v", sc.csv, sc.column, rows[0])
		}
		for _, r := range rows[1:] {
			if checkMemoryRow(t, sc.csv, rows[0], r) {
				continue
			}
			v, err := strconv.ParseFloat(r[col], 64)
			if err != nil || !(v > 0) {
				t.Errorf("%s: %s = %q in row %v, want > 0", sc.csv, sc.column, r[col], r)
			}
		}
	}
	if sc.exp == "failover" {
		checkFailover(t, out, rows)
	}
	if sc.png != "" {
		png, err := os.ReadFile(filepath.Join(out, sc.png))
		if err != nil || len(png) < 1000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Fatalf("%s missing or not a PNG (%d bytes, %v)", sc.png, len(png), err)
		}
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil || !bytes.Contains(sum, []byte("## ")) {
		t.Fatalf("summary.md missing or empty: %v", err)
	}
	js, err := os.ReadFile(filepath.Join(out, strings.TrimSuffix(sc.csv, ".csv")+".json"))
	if err != nil || len(js) < 10 {
		t.Fatalf("JSON missing: %v", err)
	}
	return rows
}

// checkFailover: the timeline has ops, and the events file lists the kills and restarts
// without errors.
func checkFailover(t *testing.T, out string, rows [][]string) {
	var total float64
	for _, r := range rows[1:] {
		v, _ := strconv.ParseFloat(r[3], 64)
		total += v
	}
	if total <= 0 {
		t.Errorf("failover timeline has no completed ops")
	}
	evs := readCSV(t, filepath.Join(out, "failover-events.csv"))
	codes := map[string]bool{}
	for _, r := range evs[1:] {
		codes[r[2]] = true
		if r[5] != "" {
			t.Errorf("event %v failed: %s", r[3], r[5])
		}
	}
	for _, c := range []string{"1", "2", "3", "5"} {
		if !codes[c] {
			t.Errorf("failover events lack code %s: %v", c, evs)
		}
	}
}

// checkMemoryRow checks a matrix row whose metric is kb_per_znode (row 11) and reports whether
// it was one. In --short mode row 10 creates 5,000 znodes of 100 B, a few MiB per server
// against an RSS of about 50 MiB that moves by as much when the server returns free pages at
// rest, so the growth may come out of either sign (CI once read -0.03 KB). What the smoke test
// can check is that the readings it is made of exist: a positive RSS before and after on every
// server, and a finite value.
func checkMemoryRow(t *testing.T, name string, header, r []string) bool {
	t.Helper()
	cols := map[string]int{}
	for i, h := range header {
		cols[h] = i
	}
	m, ok := cols["metric"]
	if !ok || r[m] != "kb_per_znode" {
		return false
	}
	for _, c := range []string{"rss_before_kb", "rss_after_kb"} {
		i, ok := cols[c]
		if !ok {
			t.Errorf("%s has no column %s: %v", name, c, header)
			continue
		}
		for _, kb := range strings.Split(r[i], ";") { // one reading per server
			if v, err := strconv.ParseFloat(kb, 64); err != nil || !(v > 0) {
				t.Errorf("%s: %s = %q in row %v, want > 0 on every server", name, c, r[i], r)
			}
		}
	}
	if v, err := strconv.ParseFloat(r[cols["value"]], 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		t.Errorf("%s: value = %q in row %v, want a finite number", name, r[cols["value"]], r)
	}
	return true
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// TestSmokeZooKeeper runs every experiment in --short mode against Apache ZooKeeper.
func TestSmokeZooKeeper(t *testing.T) {
	if err := apachezk.Available(); err != nil {
		t.Fatalf("Apache ZooKeeper is needed for the benchmark smoke tests: %v (%s)", err, apachezk.InstallHint)
	}
	for _, sc := range smokeCases {
		t.Run(sc.exp, func(t *testing.T) { runSmoke(t, "zookeeper", sc) })
	}
}

// TestSmokeCorral runs every experiment in --short mode against Corral (bin/corral). Until
// the server exists and starts, it skips — unless CORRAL_BENCH_REQUIRE=1, when it fails.
func TestSmokeCorral(t *testing.T) {
	bin := smokeCorralBinary(t)
	for _, sc := range smokeCases {
		t.Run(sc.exp, func(t *testing.T) {
			sc.args = append(sc.args, "--corral-bin", bin)
			runSmoke(t, "corral", sc)
		})
	}
}

// TestSmokeMatrixCorral runs `matrix --short` against Corral only and checks that every one of
// its rows produced a positive number (the smoke form of the side-by-side table; about 25 s).
// It skips as TestSmokeCorral does.
func TestSmokeMatrixCorral(t *testing.T) {
	bin := smokeCorralBinary(t)
	rows := runSmoke(t, "corral", smokeCase{"matrix", []string{"--corral-bin", bin}, "matrix.csv", "value", ""})
	seen := map[string]bool{}
	for _, r := range rows[1:] {
		seen[r[3]] = true // the row column
	}
	for i := 1; i <= len(matrixSpecs); i++ {
		if !seen[strconv.Itoa(i)] {
			t.Errorf("matrix.csv has no row %d", i)
		}
	}
}

// smokeCorralBinary returns the corral binary for the smoke tests after checking that it starts
// an ensemble; it skips the test when there is none or it does not start — unless
// CORRAL_BENCH_REQUIRE=1, when it fails. It sets CORRAL_BIN for the test.
func smokeCorralBinary(t *testing.T) string {
	t.Helper()
	require := os.Getenv("CORRAL_BENCH_REQUIRE") == "1"
	unavailable := func(format string, args ...any) {
		t.Helper()
		if require {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (set CORRAL_BENCH_REQUIRE=1 to fail instead)", args...)
	}
	bin, err := FindCorralBinary(os.Getenv("CORRAL_BIN"))
	if err != nil {
		unavailable("no corral binary: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c, err := corralTarget{bin: bin, tick: 2 * time.Second}.Start(ctx, Shape{Servers: 1, Shards: 2})
	cancel()
	if err != nil {
		unavailable("corral does not start: %v", err)
	}
	c.Close()
	t.Setenv("CORRAL_BIN", bin)
	return bin
}

// TestCorralOptions checks the corralproc options the corral target asks for: the shape, the
// common zoo.cfg keys, and the apply delay knob only with a delay.
func TestCorralOptions(t *testing.T) {
	tg := corralTarget{bin: "/x/corral", tick: time.Second, keepDir: true, dir: "/tmp/b"}
	o := tg.options(Shape{Servers: 3, Shards: 8, ApplyDelay: 2 * time.Millisecond})
	if o.Servers != 3 || o.Shards != 8 || o.TickTime != time.Second || o.Binary != "/x/corral" ||
		!o.KeepDir || o.Dir != "/tmp/b" || o.StartTimeout != 90*time.Second {
		t.Errorf("options: %+v", o)
	}
	if o.Knobs.ApplyDelay != 2*time.Millisecond || len(o.Knobs.ApplyLag) != 0 || o.ServerKnobs != nil {
		t.Errorf("knobs %v, %v: want an apply delay of 2ms", o.Knobs, o.ServerKnobs)
	}
	for k, v := range map[string]string{"globalOutstandingLimit": "2000", "maxClientCnxns": "0"} {
		if o.Config[k] != v {
			t.Errorf("Config[%q] = %q, want %q (%v)", k, o.Config[k], v, o.Config)
		}
	}
	o = tg.options(Shape{Servers: 0})
	if o.Servers != 1 || o.Shards != 1 {
		t.Errorf("zero shape: %d servers, %d shards", o.Servers, o.Shards)
	}
	if !o.Knobs.IsZero() {
		t.Errorf("knobs without a delay: %v", o.Knobs)
	}
}

// TestLeadership checks how the failover experiment picks Corral's leader (most shards led)
// and follower (fewest, never the leader) from a /shards page, and how a server's leadership
// is described (which shard ids it leads; a shard without a leader counts for nobody).
func TestLeadership(t *testing.T) {
	ls := []corralproc.ShardLeader{
		{Shard: 1, Leader: 2, HasLeader: true}, {Shard: 2, Leader: 2, HasLeader: true},
		{Shard: 3, Leader: 1, HasLeader: true}, {Shard: 4, Leader: 3, HasLeader: false},
	}
	counts, total := leadCounts(ls)
	if total != 4 || counts[1] != 2 || counts[0] != 1 || len(counts) != 2 {
		t.Fatalf("counts %v total %d", counts, total)
	}
	for i, want := range []string{"leads 1 of 4 shards (3)", "leads 2 of 4 shards (1, 2)", "leads 0 of 4 shards"} {
		if got := describeLeads(ls, i); got != want {
			t.Errorf("describeLeads(server %d) = %q, want %q", i+1, got, want)
		}
	}
	all := []bool{true, true, true}
	if l := mostLeading(counts, 3); l != 1 {
		t.Errorf("leader = %d, want 1", l)
	}
	if f := fewestLeading(counts, all, 1); f != 2 {
		t.Errorf("follower = %d, want 2 (leads nothing)", f)
	}
	if f := fewestLeading(counts, []bool{true, true, false}, 1); f != 0 {
		t.Errorf("follower with server 3 down = %d, want 0", f)
	}
	// Equal counts: the leader is the lowest index, the follower the next one.
	even := map[int]int{0: 1, 1: 1, 2: 1}
	if l, f := mostLeading(even, 3), fewestLeading(even, all, 0); l != 0 || f != 1 {
		t.Errorf("even split: leader %d follower %d, want 0 and 1", l, f)
	}
	if l := mostLeading(map[int]int{}, 3); l != -1 {
		t.Errorf("no leaders: %d", l)
	}
	if f := firstOther([]bool{false, true, true}, 1); f != 2 {
		t.Errorf("firstOther = %d, want 2", f)
	}
}

func TestParseFlagsShortDefaults(t *testing.T) {
	var sink bytes.Buffer
	full, err := parseFlags("throughput", nil, &sink)
	if err != nil {
		t.Fatal(err)
	}
	short, err := parseFlags("throughput", []string{"--short", "--clients", "9"}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.ReadPcts) != 11 || full.Duration != 5*time.Second || full.Clients != 30 {
		t.Errorf("full defaults: %+v", full)
	}
	if len(short.ReadPcts) != 3 || short.Duration != time.Second || short.Clients != 9 {
		t.Errorf("short defaults (with --clients 9): %+v", short)
	}
	fo, _ := parseFlags("failover", []string{"--short"}, &sink)
	if fo.ReadPct != 70 || fo.Duration != 10*time.Second {
		t.Errorf("failover defaults: read %v duration %v", fo.ReadPct, fo.Duration)
	}
	if _, err := parseFlags("throughput", []string{"--sizes", "x"}, &sink); err == nil {
		t.Error("bad --sizes accepted")
	}
	if code := MainContext(context.Background(), []string{"nope"}, &sink, &sink); code != 2 {
		t.Errorf("unknown experiment: exit %d", code)
	}
}

// TestDelayNeedsTestingBuild: `shards --delay` with a production corral binary (here a stand-in
// that answers `version` as one does) fails before its first run, saying which build it needs.
func TestDelayNeedsTestingBuild(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "corral")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'corral 0.1.0-dev (ZooKeeper 3.8 protocol)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := MainContext(t.Context(), []string{"shards", "--target", "corral", "--short", "--quiet", "--delay", "1ms",
		"--corral-bin", bin, "--out", filepath.Join(dir, "out")}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "make build-testing") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// TestSmokeFloor runs the floor experiment in --short mode (it starts no ensemble: three
// dragonboat NodeHosts in this process): both log stores, leader and follower with 1 and many
// proposers, many spread over the groups, in one process and in three (the spread line's
// proposers in all three), every line with proposals and no error (a proposal that met an
// election is retried: TestFloorProposalSurvivesElection).
func TestSmokeFloor(t *testing.T) {
	rows := runSmoke(t, "corral", smokeCase{"floor", nil, "floor.csv", "per_s", ""})
	if len(rows) != 26 {
		t.Fatalf("floor.csv has %d data rows, want 25: %v", len(rows)-1, rows)
	}
	last := rows[len(rows)-1]
	if last[0] != floorProcStore || last[1] != floorAll4 {
		t.Fatalf("last floor line %v, want %q on %q", last, floorProcStore, floorAll4)
	}
	if many := rows[2]; many[1] != floorLeader || last[2] != many[2] || many[2] == "1" {
		t.Fatalf("the spread line has %s proposers over the three processes, want the %s of line %v", last[2], many[2], many)
	}
	for _, r := range rows[1:] {
		if r[len(r)-1] != "0" {
			t.Errorf("floor line %v had errors", r)
		}
	}
}

package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/corral/corral/router"
)

func TestMatrixFlags(t *testing.T) {
	var sink bytes.Buffer
	full, err := parseFlags("matrix", nil, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if full.Sizes[0] != 3 || full.Clients != 30 || full.Warmup != 2*time.Second || full.Duration != 5*time.Second ||
		full.ZNodes != 200000 || full.Sessions != 9000 || full.MixedClient != clientAuto || full.CorralShards != 4 ||
		full.SessionInflight != 32 {
		t.Errorf("full defaults: %+v", full)
	}
	short, err := parseFlags("matrix", []string{"--short"}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if short.Warmup != 300*time.Millisecond || short.Duration != time.Second || short.ZNodes >= full.ZNodes ||
		short.Sessions >= full.Sessions {
		t.Errorf("short defaults: %+v", short)
	}
	for _, bad := range [][]string{
		{"--rows", "15"}, {"--rows", "0"}, {"--rows", "x"}, {"--znodes", "0"}, {"--sessions", "-1"},
		{"--mixed-client", "kazoo"}, {"--znodes", "many"}, {"--session-inflight", "0"},
	} {
		if _, err := parseFlags("matrix", bad, &sink); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	c, err := parseFlags("matrix", []string{"--rows", "10,11", "--mixed-client", "go-zookeeper"}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cfg: c}
	if rs := e.matrixRows(); len(rs) != 2 || rs[0].row != 10 || rs[1].row != 11 {
		t.Errorf("--rows 10,11 selected %v", rs)
	}
	if got := matrixSpecs[5].clientOf(c); got != clientGoZK {
		t.Errorf("row 6 with --mixed-client go-zookeeper uses %s", got)
	}
	c, err = parseFlags("matrix", []string{"--session-inflight", "64"}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if got := matrixSpecs[7].label(c); !strings.Contains(got, "64 creates in flight") {
		t.Errorf("row 8 with --session-inflight 64: %q", got)
	}
}

func TestMatrixClientsAndCells(t *testing.T) {
	auto := &Config{MixedClient: clientAuto}
	for _, s := range matrixSpecs {
		want := clientGoZK
		switch s.row {
		case 6:
			want = clientCorral
		case 11:
			want = clientNone
		}
		if got := s.clientOf(auto); got != want {
			t.Errorf("row %d uses %s, want %s", s.row, got, want)
		}
	}
	row1 := matrixSpecs[0]
	if got := matrixCell(row1, MatrixRow{Value: 0.52, P99Ms: 12.5}); got != "0.52 / 12.5 ms" {
		t.Errorf("row 1 cell %q", got)
	}
	if got := matrixCell(matrixSpecs[1], MatrixRow{Value: 4321, Errors: 2}); got != "4.3k/s (2 errors)" {
		t.Errorf("row 2 cell %q", got)
	}
	if got := matrixCell(matrixSpecs[9], MatrixRow{Value: 1, Err: "boom"}); got != "failed" {
		t.Errorf("failed cell %q", got)
	}
}

func TestMatrixSummaryRatios(t *testing.T) {
	e := &env{cfg: &Config{Sizes: []int{3}, Clients: 30, ZNodes: 10, Sessions: 5, MixedClient: clientAuto, SessionInflight: 32,
		DataSize: 1024, CorralShards: 4}}
	rows := []MatrixRow{
		{Target: "zookeeper", Servers: 3, Row: 1, Value: 2, P99Ms: 4},
		{Target: "corral", Servers: 3, Row: 1, Value: 1, P99Ms: 3},
		{Target: "zookeeper", Servers: 3, Row: 2, Value: 1000},
		{Target: "corral", Servers: 3, Row: 2, Value: 3000},
		{Target: "corral", Servers: 3, Row: 10, Err: "it broke"},
	}
	md := e.matrixSection(rows, []string{"zookeeper", "corral"}, 3)
	summaryHas(t, md,
		"| 1. 1 client, 1 synchronous setData at a time: p50 / p99 [go-zookeeper] | 2.00 / 4.00 ms | 1.00 / 3.00 ms | 2.00× |",
		"| 2. 30 clients, 1 synchronous setData at a time each [go-zookeeper] | 1.0k/s | 3.0k/s | 3.00× |",
		"| not measured | failed | – |",
		"failed: it broke",
	)
}

func TestMatrixHelpers(t *testing.T) {
	kb, err := readRSS(os.Getpid())
	if err != nil || kb <= 0 {
		t.Errorf("readRSS(self) = %d, %v", kb, err)
	}
	if _, err := readRSS(0); err == nil {
		t.Error("readRSS(0) succeeded")
	}
	before, err := procCPUs([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	after, err := procCPUs([]int{os.Getpid()})
	if err != nil || after[0] <= before[0] {
		t.Errorf("procCPUs(self) %v then %v after 50 ms of spinning, %v", before, after, err)
	}
	if _, err := procCPUs([]int{0}); err == nil {
		t.Error("procCPUs(0) succeeded")
	}
	lists := createdPaths([]string{"/a", "/b"}, 5)
	if strings.Join(lists[0], ",") != "/a/n-0,/a/n-2,/a/n-4" || strings.Join(lists[1], ",") != "/b/n-1,/b/n-3" {
		t.Errorf("createdPaths: %v", lists)
	}
	m := &matrixRun{shards: 4}
	note := m.placementNote(subtreeNames("/m-", 8))
	if !strings.Contains(note, "/m-0→") || !strings.Contains(note, "of 4 used") || !strings.Contains(note, "ids 2-5") {
		t.Errorf("placement note %q", note)
	}
	for _, id := range regexp.MustCompile(`→(\d+)`).FindAllStringSubmatch(note, -1) {
		if id[1] < "2" || id[1] > "5" || len(id[1]) != 1 {
			t.Errorf("placement note %q names shard %s, not a data shard id as /shards lists them", note, id[1])
		}
	}
	if note := (&matrixRun{}).placementNote([]string{"/x"}); note != "" {
		t.Errorf("unsharded placement note %q", note)
	}
	for _, shards := range []int{0, 1, 4, 8} {
		ps := probePaths(shards)
		seen := map[uint64]bool{}
		ids := []uint64{1, 2, 3, 4, 5, 6, 7, 8}[:max(shards, 1)]
		for _, p := range ps {
			seen[router.TopLevelShard(strings.TrimPrefix(p, "/"), ids)] = true
		}
		if len(seen) != max(shards, 1) || len(ps) != max(shards, 1) {
			t.Errorf("probePaths(%d) = %v covers %d shards", shards, ps, len(seen))
		}
	}
}

// TestMatrixPlot: a two-target run's ratios per row (lower-better rows inverted, a failed row
// left out) are what matrix.png draws, and the file is a PNG; one target draws nothing.
func TestMatrixPlot(t *testing.T) {
	e := &env{cfg: &Config{Sizes: []int{3}, Clients: 30, ZNodes: 10, Sessions: 5, MixedClient: clientAuto,
		SessionInflight: 32, DataSize: 1024, CorralShards: 4, Out: t.TempDir()}}
	rows := []MatrixRow{
		{Target: "zookeeper", Servers: 3, Row: 1, Value: 2},
		{Target: "corral", Servers: 3, Row: 1, Value: 1},
		{Target: "zookeeper", Servers: 3, Row: 2, Value: 1000},
		{Target: "corral", Servers: 3, Row: 2, Value: 3000},
		{Target: "zookeeper", Servers: 3, Row: 10, Value: 40},
		{Target: "corral", Servers: 3, Row: 10, Err: "it broke"},
	}
	names := []string{"zookeeper", "corral"}
	nums, ratios := e.matrixRatios(rows, names, 3)
	if fmt.Sprint(nums, ratios) != "[1 2] [2 3]" {
		t.Fatalf("ratios: rows %v, %v", nums, ratios)
	}
	name, err := e.plotMatrix(rows, names, 3)
	if err != nil || name != "matrix.png" {
		t.Fatalf("plotMatrix: %q, %v", name, err)
	}
	b, err := os.ReadFile(filepath.Join(e.cfg.Out, name))
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("matrix.png: %d bytes, %v", len(b), err)
	}
	if name, err := e.plotMatrix(rows, names[1:], 3); name != "" || err != nil {
		t.Fatalf("one target drew %q, %v", name, err)
	}
}

// TestCorralBinaryIsTheRunningOne: `corral bench` runs the servers from its own executable
// whatever the file is called (an A/B copy of another commit included); only a Go test binary
// looks for bin/corral instead.
func TestCorralBinaryIsTheRunningOne(t *testing.T) {
	for exe, test := range map[string]bool{
		"/work/bin/corral": false, "/work/bin/corral-testing": false, "/tmp/base/corral-58a9a57": false,
		"/tmp/go-build1/b001/bench.test": true,
	} {
		if isTestBinary(exe) != test {
			t.Errorf("isTestBinary(%s) = %v", exe, !test)
		}
	}
}

// TestMatrixRepeated: with --repeat, each target's cell is the median of its runs, the ratio the
// median of the runs' own ratios (not the ratio of the medians), every run's ratio is listed, a
// run that failed a row has no ratio for it, and the plot draws the median ratios.
func TestMatrixRepeated(t *testing.T) {
	var sink bytes.Buffer
	if _, err := parseFlags("matrix", []string{"--repeat", "0"}, &sink); err == nil {
		t.Error("--repeat 0 accepted")
	}
	c, err := parseFlags("matrix", []string{"--repeat", "3"}, &sink)
	if err != nil || c.Repeat != 3 {
		t.Fatalf("--repeat 3: %v, %+v", err, c)
	}
	e := &env{cfg: &Config{Sizes: []int{3}, Clients: 30, ZNodes: 10, Sessions: 5, MixedClient: clientAuto,
		SessionInflight: 32, DataSize: 1024, CorralShards: 4, Out: t.TempDir(), Rows: []int{1, 2, 10}}}
	row := func(target string, row, rep int, v, p99 float64) MatrixRow {
		return MatrixRow{Target: target, Servers: 3, Row: row, Rep: rep, Value: v, P99Ms: p99}
	}
	rows := []MatrixRow{
		// row 1 (lower is better): ratios 2.0, 1.0, 1.5 -> median 1.5; medians 2.0 / 1.0 ms
		row("zookeeper", 1, 1, 2, 8), row("corral", 1, 1, 1, 2),
		row("zookeeper", 1, 2, 1, 6), row("corral", 1, 2, 1, 3),
		row("zookeeper", 1, 3, 3, 4), row("corral", 1, 3, 2, 1),
		// row 2: ratios 3.0, 1.2, 2.0 -> median 2.0, while the medians' ratio is 2.5k/1.5k = 1.67
		row("zookeeper", 2, 1, 1000, 0), row("corral", 2, 1, 3000, 0),
		row("zookeeper", 2, 2, 2500, 0), row("corral", 2, 2, 3000, 0),
		row("zookeeper", 2, 3, 1500, 0), row("corral", 2, 3, 3000, 0),
		// row 10 (lower is better): run 2 failed on Corral; ratios 2.0 (run 1), 1.0 (run 3)
		row("zookeeper", 10, 1, 40, 0), row("corral", 10, 1, 20, 0),
		row("zookeeper", 10, 2, 40, 0), {Target: "corral", Servers: 3, Row: 10, Rep: 2, Err: "it broke"},
		row("zookeeper", 10, 3, 40, 0), row("corral", 10, 3, 40, 0),
	}
	names := []string{"zookeeper", "corral"}
	md := e.matrixSection(rows, names, 3)
	summaryHas(t, md,
		"The matrix ran 3 times",
		"| row | ZooKeeper, median | Corral, median | ratio (>1: Corral better) | each run's ratio |",
		"| 2.00 / 6.00 ms | 1.00 / 2.00 ms | 1.50× | 2.00×, 1.00×, 1.50× |",
		"| 1.5k/s | 3.0k/s | 2.00× | 3.00×, 1.20×, 2.00× |",
		"| 40.0 s | 30.0 s | 1.50× | 2.00×, 1.00× |",
		"Rows at 1.5× or more: 3 of 3 by the median of the runs' ratios, 0 of 3 in every run.",
		"| 10 | Corral, run 2 |  | failed: it broke |",
		"| 2 | ZooKeeper, run 3 |  | 0 |",
	)
	nums, ratios := e.matrixRatios(rows, names, 3)
	if fmt.Sprint(nums, ratios) != "[1 2 10] [1.5 2 1.5]" {
		t.Errorf("plotted ratios: rows %v, %v", nums, ratios)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 4 values %v", got)
	}
}

// TestMatrixSessionsFitFileLimit: a row 12 with more sessions than this process may keep
// connections open for is refused at the start, with the limit named; without row 12 the same
// --sessions is fine.
func TestMatrixSessionsFitFileLimit(t *testing.T) {
	limit, ok := openFileLimit()
	if !ok {
		t.Skip("no open-file limit here")
	}
	var sink bytes.Buffer
	many := fmt.Sprint(limit)
	_, err := parseFlags("matrix", []string{"--sessions", many}, &sink)
	if err == nil || !strings.Contains(err.Error(), "ulimit -n") {
		t.Fatalf("--sessions %s with a limit of %d: %v", many, limit, err)
	}
	if _, err := parseFlags("matrix", []string{"--sessions", many, "--rows", "1,2"}, &sink); err != nil {
		t.Fatalf("--sessions %s without row 12: %v", many, err)
	}
	if _, err := parseFlags("matrix", nil, &sink); err != nil && limit > 9000+sessionFileMargin {
		t.Fatalf("the default sessions: %v", err)
	}
}

// summaryHas fails the test for each of wants that the summary md does not contain.
func summaryHas(t *testing.T, md string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
}

package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral/corral/internal/apachezk"
)

// smokeCase is one experiment run in --short mode and the CSV column that must be positive in
// every row.
type smokeCase struct {
	exp    string
	args   []string
	csv    string
	column string
	png    string
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
// non-empty CSV whose column is > 0 in every row, a PNG, and a summary.
func runSmoke(t *testing.T, target string, sc smokeCase) {
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
			v, err := strconv.ParseFloat(r[col], 64)
			if err != nil || !(v > 0) {
				t.Errorf("%s: %s = %q in row %v, want > 0", sc.csv, sc.column, r[col], r)
			}
		}
	}
	if sc.exp == "failover" {
		checkFailover(t, out, rows)
	}
	png, err := os.ReadFile(filepath.Join(out, sc.png))
	if err != nil || len(png) < 1000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("%s missing or not a PNG (%d bytes, %v)", sc.png, len(png), err)
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil || !bytes.Contains(sum, []byte("## ")) {
		t.Fatalf("summary.md missing or empty: %v", err)
	}
	js, err := os.ReadFile(filepath.Join(out, strings.TrimSuffix(sc.csv, ".csv")+".json"))
	if err != nil || len(js) < 10 {
		t.Fatalf("JSON missing: %v", err)
	}
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
	for _, sc := range smokeCases {
		t.Run(sc.exp, func(t *testing.T) {
			sc.args = append(sc.args, "--corral-bin", bin)
			runSmoke(t, "corral", sc)
		})
	}
}

// TestCorralConfig checks the zoo.cfg the corral target writes: the standard keys, one
// server line per member, and the Corral keys.
func TestCorralConfig(t *testing.T) {
	dir := t.TempDir()
	c := &corralCluster{t: corralTarget{tick: time.Second}, root: dir}
	for i := 0; i < 3; i++ {
		c.servers = append(c.servers, &corralServer{myid: i + 1, dir: filepath.Join(dir, "s"+strconv.Itoa(i+1)),
			clientPort: 2181 + i, peerPort: 2888 + i, electionPort: 3888 + i, admin: 8080 + i})
	}
	if err := c.writeConfig(c.servers[1], Shape{Servers: 3, Shards: 8, ApplyDelay: 2 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "s2", "zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"tickTime=1000\n", "initLimit=10\n", "syncLimit=5\n", "clientPort=2182\n", "clientPortAddress=127.0.0.1\n",
		"admin.serverPort=8081\n", "4lw.commands.whitelist=*\n", "corral.shards=8\n", "corral.testing.applyDelay=2ms\n",
		"server.1=127.0.0.1:2888:3888\n", "server.2=127.0.0.1:2889:3889\n", "server.3=127.0.0.1:2890:3890\n",
		"dataDir=" + filepath.Join(dir, "s2", "data") + "\n", "maxClientCnxns=0\n",
	} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("zoo.cfg lacks %q:\n%s", want, cfg)
		}
	}
	myid, err := os.ReadFile(filepath.Join(dir, "s2", "data", "myid"))
	if err != nil || strings.TrimSpace(string(myid)) != "2" {
		t.Errorf("myid = %q, %v", myid, err)
	}
	// No delay: no key.
	if err := c.writeConfig(c.servers[0], Shape{Servers: 3, Shards: 1}); err != nil {
		t.Fatal(err)
	}
	cfg, _ = os.ReadFile(filepath.Join(dir, "s1", "zoo.cfg"))
	if strings.Contains(string(cfg), "applyDelay") {
		t.Errorf("applyDelay written without a delay:\n%s", cfg)
	}
}

func TestParseShardLeaders(t *testing.T) {
	counts, total, err := parseShardLeaders("shard=1 leader=2 term=3 has_leader=true\n" +
		"shard=2 leader=2 term=3 has_leader=true\nshard=3 leader=1 term=3 has_leader=true\n" +
		"shard=4 leader=0 term=4 has_leader=false\n")
	if err != nil || total != 4 || counts[2] != 2 || counts[1] != 1 || len(counts) != 2 {
		t.Fatalf("counts %v total %d err %v", counts, total, err)
	}
	if _, _, err := parseShardLeaders("nothing here\n"); err == nil {
		t.Fatal("empty page accepted")
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

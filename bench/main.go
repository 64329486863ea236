package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/corral/corral/client"
)

// Config is the parsed command line of one experiment run. Flags left unset take the full
// default, or the --short default when --short is given.
type Config struct {
	Experiment string
	Target     string
	Servers    []string
	Out        string
	Short      bool
	Quiet      bool

	Sizes         []int
	Clients       int
	Outstanding   int
	DataSize      int
	Groups        int
	Warmup        time.Duration
	ClusterWarmup time.Duration
	Duration      time.Duration
	Bucket        time.Duration
	ReadPcts      []float64
	CorralShards  int
	Shards        []int
	Delay         time.Duration
	Workers       []int
	BarrierN      []int
	Rounds        int
	ReadPct       float64
	TargetOps     float64
	P99           time.Duration
	MinServers    int
	ZNodes        int    // matrix: creates of the bulk load (row 10)
	Sessions      int    // matrix: sessions opened (row 12)
	MixedClient   string // matrix: client of rows 3-7: "auto", "corral" or "go-zookeeper"
	// SessionInflight is matrix rows 8-10's calls in flight on their one session.
	SessionInflight int
	Rows            []int // matrix: the rows to run (empty: all)
	// Repeat is how many times the matrix runs whole, each time on fresh ensembles (exp_matrix_repeat.go).
	Repeat      int
	CorralBin   string
	Tick        time.Duration
	KeepDirs    bool
	CommandLine string
}

// flagDefault is a flag's full and --short defaults.
type flagDefault struct{ full, short string }

var defaults = map[string]flagDefault{
	"sizes":           {"3", "3"},
	"clients":         {"30", "6"},
	"outstanding":     {"100", "50"},
	"warmup":          {"2s", "500ms"},
	"cluster-warmup":  {"5s", "1s"},
	"duration":        {"5s", "1s"},
	"read-pcts":       {"0,10,20,30,40,50,60,70,80,90,100", "0,50,100"},
	"shards":          {"1,2,4,8", "1,2"},
	"workers":         {"1,10,20", "1,4"},
	"clients-barrier": {"50,200", "4"},
	"rounds":          {"200", "3"},
	"target-ops":      {"20000", "500"},
	"p99":             {"20ms", "200ms"},
	"min-servers":     {"3", "1"},
	"znodes":          {"200000", "5000"},
	"sessions":        {"9000", "300"},
}

// experiment-specific defaults that differ from the table above.
var expDefaults = map[string]map[string]flagDefault{
	"failover": {"duration": {"30s", "10s"}, "warmup": {"3s", "1s"}},
	"create":   {"sizes": {"3", "1"}, "outstanding": {"1", "1"}},
	"barrier":  {"sizes": {"3", "1"}},
	"shards":   {"sizes": {"3", "1"}},
	"sizing":   {"sizes": {"3,5,7", "1,3"}},
	"matrix": {"sizes": {"3", "1"}, "clients": {"30", "10"}, "outstanding": {"10", "10"},
		"warmup": {"2s", "300ms"}, "duration": {"5s", "1s"}, "cluster-warmup": {"5s", "500ms"}},
}

type experiment struct {
	name  string
	about string
	run   func(ctx context.Context, e *env) error
}

var experiments = []experiment{
	{"throughput", "saturated throughput vs. read ratio × ensemble size (paper Table 1, Figure 5)", runThroughput},
	{"failover", "throughput per 100 ms while a follower, then the leader, crash and restart (Figure 8)", runFailover},
	{"create", "create + async delete, 1/10/20 synchronous workers: creates/s and latency (Table 2)", runCreate},
	{"barrier", "double barrier with N clients for M rounds: completion time (Table 3)", runBarrier},
	{"shards", "write throughput as corral.shards grows, optionally with an injected apply delay", runShards},
	{"sizing", "sweep ensemble size × shards at a target load and recommend the smallest config", runSizing},
	{"matrix", "the everyday table beside ZooKeeper: sync latency, mixed loads, creates, bulk load, memory, sessions", runMatrix},
	{"floor", "one Raft round with no Corral server around it: 3 dragonboat NodeHosts in-process, synchronous proposals", runFloor},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: corral bench <experiment> [flags]   (corral bench <experiment> -h for flags)")
	fmt.Fprintln(w, "\nexperiments:")
	for _, e := range experiments {
		fmt.Fprintf(w, "  %-11s %s\n", e.name, e.about)
	}
	fmt.Fprintln(w, "\ncommon flags: --target corral|zookeeper|both, --servers host:port,..., --out DIR, --short")
}

// Main runs `corral bench <experiment> [flags]` and returns the process exit code: 0 when every
// target ran, 1 when a target failed (the others' results are still written), 2 for usage errors.
func Main(args []string) int {
	return MainContext(context.Background(), args, os.Stdout, os.Stderr)
}

// MainContext is Main with a context and explicit output streams (tests).
func MainContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	var exp *experiment
	for i := range experiments {
		if experiments[i].name == args[0] {
			exp = &experiments[i]
		}
	}
	if exp == nil {
		fmt.Fprintf(stderr, "bench: unknown experiment %q\n", args[0])
		usage(stderr)
		return 2
	}
	cfg, err := parseFlags(exp.name, args[1:], stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "bench %s: %v\n", exp.name, err)
		return 2
	}
	targets, err := makeTargets(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "bench %s: %v\n", exp.name, err)
		return 2
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var prog *Progress
	if !cfg.Quiet {
		prog = NewProgress(stderr)
	}
	e := &env{cfg: cfg, targets: targets, prog: prog, started: time.Now(), loadStart: loadAvg()}
	prog.Stage("measuring the disk's synchronous writes")
	if p, err := probeDisk(os.TempDir()); err != nil {
		e.disk = "not measured: " + err.Error()
	} else {
		e.disk = p.String()
	}
	runErr := exp.run(ctx, e)
	prog.Close()
	if werr := e.writeSummary(); werr != nil && runErr == nil {
		runErr = werr
	}
	if e.echoSummary {
		fmt.Fprint(stdout, e.summaryText)
	}
	fmt.Fprintf(stdout, "results in %s\n", cfg.Out)
	for _, f := range e.failures {
		fmt.Fprintf(stderr, "bench %s: %s\n", exp.name, f)
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "bench %s: %v\n", exp.name, runErr)
		return 1
	}
	if len(e.failures) > 0 {
		return 1
	}
	return 0
}

func parseFlags(exp string, args []string, stderr io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("corral bench "+exp, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg                                           = &Config{Experiment: exp}
		servers, sizes, readPcts, shards, workers, bn string
		warmup, duration, p99, clusterWarmup          string
		clients, outstanding, rounds, minServers      string
		targetOps, znodes, sessions, rows             string
	)
	def := func(name string) string { return pickDefault(exp, name, false) }
	fs.StringVar(&cfg.Target, "target", "both", "corral, zookeeper, or both (Apache ZooKeeper first, then Corral, same workload)")
	fs.StringVar(&servers, "servers", "", "host:port,... of an ensemble run by someone else (instead of starting one)")
	fs.StringVar(&cfg.Out, "out", "", "output directory (default ./bench-results/<timestamp>)")
	fs.BoolVar(&cfg.Short, "short", false, "shrink everything to a few seconds (smoke tests, make bench)")
	fs.BoolVar(&cfg.Quiet, "quiet", false, "no progress line on stderr")
	fs.StringVar(&sizes, "sizes", def("sizes"), "ensemble sizes")
	fs.StringVar(&clients, "clients", def("clients"), "client sessions, spread round-robin over the servers")
	fs.StringVar(&outstanding, "outstanding", def("outstanding"), "outstanding requests per client")
	fs.IntVar(&cfg.DataSize, "data-size", 1024, "znode payload in bytes")
	fs.IntVar(&cfg.Groups, "groups", 16, "top-level subtrees the per-client znodes are spread over (/bench-00 ...); 1 puts them all under /bench")
	fs.StringVar(&warmup, "warmup", def("warmup"), "warm-up before the measured window")
	fs.StringVar(&clusterWarmup, "cluster-warmup", def("cluster-warmup"), "load run once per started ensemble before any measurement, not recorded (JIT, caches)")
	fs.StringVar(&duration, "duration", def("duration"), "measured window per data point (failover: the whole timeline)")
	fs.DurationVar(&cfg.Bucket, "bucket", 100*time.Millisecond, "timeline bucket width")
	fs.StringVar(&readPcts, "read-pcts", def("read-pcts"), "throughput: read percentages")
	fs.IntVar(&cfg.CorralShards, "corral-shards", 4, "corral.shards for every experiment but shards and sizing")
	fs.StringVar(&shards, "shards", def("shards"), "shards, sizing: corral.shards values to sweep")
	fs.DurationVar(&cfg.Delay, "delay", 0, "shards: also run with this apply delay per written op (needs a corraltesting build of corral: make build-testing, then bin/corral-testing bench ... or --corral-bin bin/corral-testing)")
	fs.StringVar(&workers, "workers", def("workers"), "create: synchronous worker counts")
	fs.StringVar(&bn, "barrier-clients", def("clients-barrier"), "barrier: client counts")
	fs.StringVar(&rounds, "rounds", def("rounds"), "barrier: barriers (rounds) per run")
	fs.Float64Var(&cfg.ReadPct, "read-pct", -1, "failover (default 70), shards (0), sizing (90): read percentage")
	fs.StringVar(&targetOps, "target-ops", def("target-ops"), "sizing: required ops/s")
	fs.StringVar(&p99, "p99", def("p99"), "sizing: bound on p99 latency at the target rate")
	fs.StringVar(&minServers, "min-servers", def("min-servers"), "sizing: smallest ensemble to recommend")
	fs.StringVar(&znodes, "znodes", def("znodes"), "matrix: znodes created by the bulk load (row 10)")
	fs.StringVar(&sessions, "sessions", def("sessions"), "matrix: sessions opened, one ephemeral znode each (row 12)")
	fs.StringVar(&rows, "rows", "", "matrix: run only these rows (e.g. 1,3,10,11; default all)")
	fs.StringVar(&cfg.MixedClient, "mixed-client", clientAuto, "matrix: client of the pipelined rows 3-7: go-zookeeper, corral (Corral's client), or auto (go-zookeeper, Corral's client for reads only)")
	fs.IntVar(&cfg.SessionInflight, "session-inflight", matrixInflight, "matrix: creates in flight on the one session of rows 8-10")
	fs.IntVar(&cfg.Repeat, "repeat", 1, "matrix: run the whole matrix this many times, each on fresh ensembles; the summary gives each row's median and every run's ratio")
	fs.StringVar(&cfg.CorralBin, "corral-bin", "", "corral binary (default: this binary, or bin/corral)")
	fs.DurationVar(&cfg.Tick, "tick", 2*time.Second, "tickTime of the started ensembles")
	fs.BoolVar(&cfg.KeepDirs, "keep", false, "keep the servers' directories (logs, data)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// Re-pick unset defaults now that --short is known.
	get := func(name string, v *string) {
		if !set[name] {
			*v = pickDefault(exp, name, cfg.Short)
		}
	}
	get("sizes", &sizes)
	get("clients", &clients)
	get("outstanding", &outstanding)
	get("warmup", &warmup)
	get("cluster-warmup", &clusterWarmup)
	get("duration", &duration)
	get("read-pcts", &readPcts)
	get("shards", &shards)
	get("workers", &workers)
	if !set["barrier-clients"] {
		bn = pickDefault(exp, "clients-barrier", cfg.Short)
	}
	get("rounds", &rounds)
	get("target-ops", &targetOps)
	get("p99", &p99)
	get("min-servers", &minServers)
	get("znodes", &znodes)
	get("sessions", &sessions)

	var err error
	var errs []error
	check := func(e error) {
		if e != nil {
			errs = append(errs, e)
		}
	}
	cfg.Servers = parseAddrs(servers)
	cfg.Sizes, err = parseInts(sizes)
	check(err)
	_, err = fmt.Sscan(clients, &cfg.Clients)
	check(err)
	_, err = fmt.Sscan(outstanding, &cfg.Outstanding)
	check(err)
	cfg.Warmup, err = time.ParseDuration(warmup)
	check(err)
	cfg.Duration, err = time.ParseDuration(duration)
	check(err)
	cfg.ClusterWarmup, err = time.ParseDuration(clusterWarmup)
	check(err)
	cfg.ReadPcts, err = parseFloats(readPcts)
	check(err)
	cfg.Shards, err = parseInts(shards)
	check(err)
	cfg.Workers, err = parseInts(workers)
	check(err)
	cfg.BarrierN, err = parseInts(bn)
	check(err)
	_, err = fmt.Sscan(rounds, &cfg.Rounds)
	check(err)
	_, err = fmt.Sscan(targetOps, &cfg.TargetOps)
	check(err)
	cfg.P99, err = time.ParseDuration(p99)
	check(err)
	_, err = fmt.Sscan(minServers, &cfg.MinServers)
	check(err)
	_, err = fmt.Sscan(znodes, &cfg.ZNodes)
	check(err)
	_, err = fmt.Sscan(sessions, &cfg.Sessions)
	check(err)
	cfg.Rows, err = parseInts(rows)
	check(err)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if cfg.ReadPct < 0 {
		cfg.ReadPct = map[string]float64{"failover": 70, "shards": 0, "sizing": 90}[exp]
	}
	switch {
	case len(cfg.Sizes) == 0 || cfg.Clients <= 0 || cfg.Outstanding <= 0 || cfg.Duration <= 0:
		return nil, fmt.Errorf("--sizes, --clients, --outstanding and --duration must be positive")
	case cfg.ReadPct > 100:
		return nil, fmt.Errorf("--read-pct must be within 0..100")
	case cfg.ZNodes <= 0 || cfg.Sessions <= 0 || cfg.SessionInflight <= 0 || cfg.Repeat <= 0:
		return nil, fmt.Errorf("--znodes, --sessions, --session-inflight and --repeat must be positive")
	case cfg.DataSize < 0:
		return nil, fmt.Errorf("--data-size must not be negative")
	case cfg.MixedClient != clientAuto && cfg.MixedClient != clientCorral && cfg.MixedClient != clientGoZK:
		return nil, fmt.Errorf("--mixed-client must be %s, %s or %s, not %q", clientAuto, clientGoZK, clientCorral, cfg.MixedClient)
	}
	for _, r := range cfg.Rows {
		if r < 1 || r > len(matrixSpecs) {
			return nil, fmt.Errorf("--rows: there is no row %d (1..%d)", r, len(matrixSpecs))
		}
	}
	if exp == "matrix" && (len(cfg.Rows) == 0 || slices.Contains(cfg.Rows, 12)) {
		if err := checkSessionFiles(cfg.Sessions); err != nil {
			return nil, err
		}
	}
	if cfg.Out == "" {
		cfg.Out = "bench-results/" + time.Now().Format("20060102-150405")
	}
	cfg.CommandLine = "corral bench " + exp
	if len(args) > 0 {
		cfg.CommandLine += " " + strings.Join(args, " ")
	}
	return cfg, nil
}

func pickDefault(exp, name string, short bool) string {
	d, ok := expDefaults[exp][name]
	if !ok {
		d = defaults[name]
	}
	if short {
		return d.short
	}
	return d.full
}

// makeTargets turns --target and --servers into the targets to run, in run order.
func makeTargets(cfg *Config) ([]Target, error) {
	if len(cfg.Servers) > 0 {
		if cfg.Target == "both" {
			// --servers names one ensemble; label it "external" unless --target named it.
			return []Target{externalTarget{addrs: cfg.Servers}}, nil
		}
		return []Target{namedExternal{externalTarget{addrs: cfg.Servers}, cfg.Target}}, nil
	}
	var out []Target
	for _, name := range strings.Split(cfg.Target, ",") {
		switch strings.TrimSpace(name) {
		case "zookeeper", "zk":
			out = append(out, zkTarget{tick: cfg.Tick, keepDir: cfg.KeepDirs})
		case "corral":
			out = append(out, lazyCorral(cfg))
		case "both":
			out = append(out, zkTarget{tick: cfg.Tick, keepDir: cfg.KeepDirs}, lazyCorral(cfg))
		default:
			return nil, fmt.Errorf("unknown --target %q (corral, zookeeper, both)", name)
		}
	}
	return out, nil
}

// lazyCorral finds the corral binary when the target is first started, so that a missing
// binary fails the Corral half of a `both` run, not the whole command.
func lazyCorral(cfg *Config) Target {
	return corralLazy{cfg: cfg}
}

type corralLazy struct{ cfg *Config }

func (corralLazy) Name() string  { return "corral" }
func (corralLazy) Sharded() bool { return true }
func (corralLazy) Managed() bool { return true }
func (t corralLazy) Start(ctx context.Context, s Shape) (Cluster, error) {
	bin, err := FindCorralBinary(t.cfg.CorralBin)
	if err != nil {
		return nil, err
	}
	return corralTarget{bin: bin, tick: t.cfg.Tick, keepDir: t.cfg.KeepDirs}.Start(ctx, s)
}

// namedExternal is an external ensemble labelled by --target (e.g. a Corral someone runs).
type namedExternal struct {
	externalTarget
	name string
}

func (t namedExternal) Name() string { return t.name }

// env is the state of one experiment run.
type env struct {
	cfg       *Config
	targets   []Target
	prog      *Progress
	started   time.Time
	loadStart string
	// disk describes the synchronous writes of the directory the ensembles keep their data
	// in, measured before the experiment (probeDisk).
	disk     string
	failures []string
	sections []string // markdown sections of summary.md, in order
	files    []string
	// noTargets leaves the targets and the client load out of summary.md: the experiment
	// starts no ensemble (floor).
	noTargets bool
	// echoSummary prints summary.md on stdout too (matrix).
	echoSummary bool
	summaryText string
}

// fail records that a target could not run (part of) an experiment; the run goes on.
func (e *env) fail(t Target, what string, err error) {
	msg := fmt.Sprintf("%s: %s: %v", t.Name(), what, err)
	e.failures = append(e.failures, msg)
	e.prog.Logf("FAILED %s", firstLine(msg))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// withCluster starts target t in shape s, runs fn, and stops the cluster.
func (e *env) withCluster(ctx context.Context, t Target, s Shape, fn func(Cluster) error) error {
	c, err := e.startCluster(ctx, t, s)
	if err != nil {
		return err
	}
	defer func() {
		e.prog.Stage("%s: stopping", t.Name())
		c.Close()
	}()
	return fn(c)
}

// startCluster starts target t in shape s (without Corral's keys for an unsharded target);
// the caller closes it.
func (e *env) startCluster(ctx context.Context, t Target, s Shape) (Cluster, error) {
	if !t.Sharded() {
		s.Shards, s.ApplyDelay = 0, 0
	}
	e.prog.Stage("%s: starting %s", t.Name(), s)
	c, err := t.Start(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", s, err)
	}
	return c, nil
}

// workload returns the configured workload for addrs at readPct.
func (e *env) workload(addrs []string, readPct float64, label string) Workload {
	c := e.cfg
	return Workload{
		Addrs: addrs, Clients: c.Clients, Outstanding: c.Outstanding, ReadPct: readPct,
		DataSize: c.DataSize, Groups: c.Groups, Warmup: c.Warmup, Duration: c.Duration,
		Bucket: c.Bucket, Label: label, Session: client.Options{SessionTimeout: 10 * time.Second},
	}
}

// prepareAndWarm creates the per-client znodes and runs the cluster warm-up: a 50 % read load
// for --cluster-warmup that is not recorded, so that the first data point of a fresh ensemble
// does not pay for JIT compilation (Apache ZooKeeper) or cold caches.
func (e *env) prepareAndWarm(ctx context.Context, t Target, c Cluster) error {
	e.prog.Stage("%s: creating %d znodes", t.Name(), e.cfg.Clients)
	if err := Prepare(ctx, c.Addrs(), e.cfg.Clients, e.cfg.Groups, e.cfg.DataSize); err != nil {
		return err
	}
	if e.cfg.ClusterWarmup <= 0 {
		return nil
	}
	e.prog.Stage("%s: warming up (%v, not recorded)", t.Name(), e.cfg.ClusterWarmup)
	w := e.workload(c.Addrs(), 50, t.Name()+" warm-up")
	w.Warmup, w.Duration = 0, e.cfg.ClusterWarmup
	if _, err := RunLoad(ctx, w, e.prog); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return nil
}

// shape returns the ensemble shape for a target at size n with the configured shard count.
func (e *env) shape(n int) Shape { return Shape{Servers: n, Shards: e.cfg.CorralShards} }

func (e *env) writeSummary() error {
	var b strings.Builder
	fmt.Fprintf(&b, "# corral bench %s\n\n", e.cfg.Experiment)
	fmt.Fprintf(&b, "- command: `%s`\n", e.cfg.CommandLine)
	fmt.Fprintf(&b, "- started: %s, took %s\n", e.started.Format(time.RFC3339), time.Since(e.started).Round(time.Second))
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "- machine: %s, %d CPUs, %s/%s, %s\n", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "- load average (1/5/15 min) at start: %s, at end: %s — anything above the core count means other processes competed with the run\n",
		e.loadStart, loadAvg())
	fmt.Fprintf(&b, "- disk (%s, before the run): %s\n", os.TempDir(), e.disk)
	if !e.noTargets {
		names := make([]string, 0, len(e.targets))
		for _, t := range e.targets {
			names = append(names, t.Name())
		}
		fmt.Fprintf(&b, "- targets (in run order): %s\n", strings.Join(names, ", "))
		fmt.Fprintf(&b, "- load: %d clients × %d outstanding, %d-byte znodes over %d subtrees; per ensemble a %v unrecorded warm-up; per point warm-up %v, window %v\n",
			e.cfg.Clients, e.cfg.Outstanding, e.cfg.DataSize, e.cfg.Groups, e.cfg.ClusterWarmup, e.cfg.Warmup, e.cfg.Duration)
	}
	b.WriteString("\n")
	for _, s := range e.sections {
		b.WriteString(s)
		b.WriteString("\n")
	}
	if len(e.failures) > 0 {
		b.WriteString("## Failures\n\n")
		for _, f := range e.failures {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(firstLine(f), "|", "\\|"))
		}
		b.WriteString("\n")
	}
	if len(e.files) > 0 {
		sort.Strings(e.files)
		b.WriteString("## Files\n\n")
		for _, f := range e.files {
			fmt.Fprintf(&b, "- [%s](%s)\n", f, f)
		}
	}
	e.summaryText = b.String()
	return e.writeFile("summary.md", []byte(e.summaryText))
}

// sessionFileMargin is what matrix row 12 needs open in this process beside its sessions' connections
// (the counting session, the pause probes, the ensembles' processes).
const sessionFileMargin = 512

// checkSessionFiles refuses a row 12 whose sessions would not fit in this process's open-file
// limit: it would otherwise fail minutes in, when a connection cannot be opened.
func checkSessionFiles(sessions int) error {
	limit, ok := openFileLimit()
	if !ok || uint64(sessions)+sessionFileMargin <= limit {
		return nil
	}
	return fmt.Errorf("--sessions %d: matrix row 12 keeps that many connections open in this process, which may open %d files "+
		"(ulimit -n, %d of them kept for the rest); lower --sessions, raise the limit, or leave row 12 out with --rows",
		sessions, limit, sessionFileMargin)
}

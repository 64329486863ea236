// Package bench is Corral's load generator and the ZooKeeper paper's experiments (Hunt et al.,
// USENIX ATC 2010, §5), run as `corral bench <experiment> [flags]` (cmd/corral calls [Main]).
// It speaks only the ZooKeeper client protocol, through package client, so the same workload
// drives Apache ZooKeeper 3.8 and Corral; `--target both` runs them back to back in one process
// and reports ratios, the only fair comparison on a shared machine. docs/benchmarks.md is the
// user's guide and holds the measured results.
//
// # Workload (load.go)
//
// [RunLoad] opens Clients sessions spread round-robin over the servers (client i prefers server
// i mod n). Each session has Outstanding slots; a slot has at most one request in flight, its
// own start time, random state and pre-bound callbacks, so issuing allocates nothing and no
// order between slots is assumed. Closed loop (the paper's saturation runs): a completed slot
// reissues at once from the reply callback. Paced (sizing): a 1 ms pacer hands the target
// rate to free slots; a request due when no slot is free is counted as missed. Requests are
// 1 KiB getData/setData on the client's own znode (pre-created by [Prepare] under /bench-NN,
// spread over top-level subtrees because those are what Corral's mount table places on shards),
// or create + asynchronous delete ([ModeCreate], Table 2).
//
// Measurement: a warm-up, then the measured window; completions are counted per 100 ms bucket
// over the whole run ([Timeline]) and latencies recorded per op kind in HdrHistogram ([Hist],
// 1 µs–60 s, 3 significant digits) for completions inside the window. The generator's own CPU
// (getrusage) and the machine's (/proc/stat) are sampled at the window's edges ([CPUUse]), so a
// reader can tell whether the generator, rather than the servers, was the limit.
//
// When a session breaks (a killed server) its failed requests count as errors and the worker
// dials the next servers with a new session and restarts its slots, as the paper's clients
// switch servers when their connection breaks. Every goroutine of a load (workers' supervisors,
// the pacer, the schedule of a failover run) is owned by RunLoad and stopped before it returns;
// every session is closed.
//
// # Targets (target.go, corral.go)
//
// A [Target] starts ensembles of a [Shape] (servers, Corral shards, Corral's injected apply
// delay): Apache ZooKeeper from the Debian package via internal/apachezk; Corral as `corral
// server --config zoo.cfg` child processes started by internal/corralproc (generated zoo.cfg
// and myid per server), ready when every server answers ruok with imok and accepts a session; or an external ensemble
// (--servers), which cannot be crashed. Both started targets get globalOutstandingLimit=2000
// (the paper's throttle) and maxClientCnxns=0.
//
// # Experiments
//
// throughput (Table 1, Figure 5), failover (Figure 8), create (Table 2), barrier (Table 3),
// shards (write throughput as corral.shards grows, optionally with an apply delay injected
// through a test knob, which only a corraltesting build of corral reads: --delay),
// sizing (sweep servers × shards at a target rate; the choice is the pure function [Recommend]),
// matrix (the everyday table beside ZooKeeper, driven mostly by go-zookeeper: exp_matrix*.go;
// --repeat N runs it whole N times and reports medians and every run's ratio: exp_matrix_repeat.go),
// floor (one Raft round with no Corral server around it: three dragonboat NodeHosts in this
// process, with dragonboat's log store and with a Corral server's, then in three processes of
// the corral binary started as floor nodes: exp_floor_proc.go; it starts no ensemble).
// Each writes <experiment>.csv and .json (every data point), <experiment>.png (gonum/plot, the
// targets on the same axes; not matrix or floor) and summary.md into --out, with a progress
// line on stderr.
package bench

// Package corralproc runs a Corral ensemble as separate OS processes, each
// `corral server --config zoo.cfg` started from its own standard zoo.cfg, on
// loopback ports. It is the process-level counterpart of internal/apachezk
// (same shape: [Start], [Ensemble.ConnectString], [Ensemble.Kill],
// [Ensemble.Restart], ...) so that tests and tools can drive Apache ZooKeeper
// and Corral the same way, and so that what they exercise is exactly what an
// operator runs: the binary, zoo.cfg parsing, myid, real sockets between
// servers, crash and restart from the data directory.
//
// What it owns:
//
//   - The binary ([Binary]): unless [Options.Binary] names one, the package
//     builds ./cmd/corral of the module it runs in (found with `go env
//     GOMOD`) once per process with `go build` and uses a private copy in a
//     temporary directory, so a test never runs a stale bin/corral. The build
//     uses CGO_ENABLED=0 like `make build` (shared compile cache) and writes
//     to a per-checkout file in the user cache directory under a file lock,
//     so that when nothing changed `go build` skips the link. Temporary
//     directories of processes that have died are swept by the next build.
//   - Lifecycle of an ensemble ([Start]): N servers, server i (0-based) with
//     myid i+1 in <root>/s<i+1>/ holding zoo.cfg, data/myid (and Corral's
//     data under data/) and server.log (the process's stdout and stderr,
//     appended across restarts). Every server gets four free loopback ports:
//     client, peer (Raft), election (written to server.N, unused by Corral)
//     and admin HTTP (/metrics, /health, /shards; [Ensemble.AdminAddr]).
//     Options.Config adds or replaces zoo.cfg keys for every server,
//     Options.ServerConfig for one server.
//   - Test knobs (package internal/testknobs: an apply delay, lagging
//     replicas): Options.Knobs for every server, Options.ServerKnobs for one,
//     passed as environment variables, which only a binary built with -tags
//     corraltesting reads. With knobs the default binary is [TestingBinary]
//     (built and cached as Binary's is); a given Options.Binary must be such
//     a build ([CheckTestingBinary] asks its `corral version`). Without knobs
//     the servers run the production build, and no server inherits knob
//     variables from the test's own environment.
//   - Readiness ([Ensemble.WaitReady]): every running server answers the
//     `ruok` four-letter word with `imok`. A Corral server opens its client
//     port only once all its shards have a leader, so this means it serves.
//     (If Options.Config leaves ruok out of 4lw.commands.whitelist, the
//     whitelist refusal counts as an answer too.)
//   - Fault injection on single servers: [Ensemble.Kill] (SIGKILL),
//     [Ensemble.Stop] (SIGTERM and wait), [Ensemble.Restart] /
//     [Ensemble.Start] (same zoo.cfg and data directory).
//
// Port races: ports are drawn at random below the kernel's ephemeral range
// (procutil.FreePorts) just before the servers start, and a stopped server's
// ports can be taken meanwhile by another test process's ensemble. When a
// server's log, since its launch, says "address already in use", [Start]
// retries the whole ensemble with fresh ports, and [Ensemble.Start] and
// [Ensemble.StartOne] (restart of one server) give that server fresh client
// and admin ports (its peer port is part of the other servers' configuration and
// of the Raft membership, so it cannot move). Every start failure carries the
// tail of the failing servers' logs.
//
// Invariants: every process started by an Ensemble is stopped and waited for
// by [Ensemble.Close] (which also removes the directories unless
// [Options.KeepDir]); each process has exactly one goroutine, owned by the
// Ensemble, that reaps it. On Linux children get SIGKILL when the process that
// started them dies (parent-death signal), so a crashed test leaves no server
// holding ports. Each child has its own process group, so a terminal's Ctrl-C
// reaches only the test, which then cleans up in order.
//
// Callers: tests/kazoo, tests/zkcli (real clients against a 3-process
// ensemble, compared with Apache ZooKeeper) and tools that need a real
// ensemble.
package corralproc

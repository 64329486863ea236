// Package testknobs holds the behaviours that only tests and benchmarks ask of a Corral server:
// an apply delay per written op on every data shard (a latency-bound commit, for `corral bench
// shards --delay`) and an apply lag on single replicas (a replica that falls behind, for the
// guarantee tests in tests/shards). Nothing in zoo.cfg sets them.
//
// How a server gets them:
//
//   - In process: the test sets [Knobs] on the server's configuration
//     (cluster.Config.SetTestingKnobs; internal/testcluster's Options.Knobs). The method takes
//     this package's type, which only code inside the module can name.
//   - Separate processes: only a binary built with `-tags corraltesting` ([Enabled]; `make
//     build-testing` writes bin/corral-testing, internal/corralproc builds its own) reads them,
//     at start-up, from the environment variables [ApplyDelayEnv] and [ApplyLagEnv] ([FromEnv]),
//     logs them, and says "corraltesting" in `corral version`. [Knobs.Environ] writes them for a
//     child process. A binary built without the tag never calls FromEnv, so the linker leaves
//     the parsing out of it (internal/corralproc's TestProductionBinaryHasNoKnobs checks the
//     symbol table).
//
// The knobs are zero in production, where the code paths they touch (shard.Config's
// ApplyDelayPerOp, router.Shard.SetApplyLag) do nothing. Expensive invariant checks, if any are
// added, belong behind the same tag ([Enabled] is a constant, so the compiler drops them from
// a production build), the way pebble keeps its checks behind its `invariants` tag.
package testknobs

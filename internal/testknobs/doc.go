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
// The code the knobs drive exists in corraltesting builds only, the way pebble keeps its
// checks behind its `invariants` tag: replica.Config.SetApplyDelayPerOp, router.Shard.SetApplyLag
// and router.Router.SetTxnHook (the in-process hooks tests use directly, through
// internal/testcluster's SetApplyLag and SetTxnHook) live in tagged files; a production build
// has empty stand-ins that do nothing, and refuses knobs set in process (cluster.Start fails).
// `make test` builds the tests with the tag (TESTTAGS); without it, a test that needs a hook or
// knobs skips and says why. Expensive invariant checks, if any are added, belong behind the
// same tag ([Enabled] is a constant, so the compiler drops them from a production build).
package testknobs

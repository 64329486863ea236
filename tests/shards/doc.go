// Package shardstest checks, on an ensemble of three servers with four data shards
// (corral.placement=hash), the guarantees that splitting the namespace over several Raft groups
// must not break, each in a test named after it:
//
//   - top-level znodes that live on another shard than "/" (mount points) are created and deleted
//     exactly as in ZooKeeper: "/"'s children, cversion, numChildren and pzxid, watches, errors,
//     ephemerals, create2's stat and sequential names;
//   - a multi over several shards is atomic (one zxid everywhere, ZooKeeper's per-op results when
//     it fails, never seen half applied);
//   - a session's writes are applied in its order across shards, and its replies come in order;
//   - the ready-znode pattern works across shards, reads never go back in time across shards (also
//     after moving to another server), sync makes a read linearizable;
//   - a watch event is delivered before the reply of a read that depends on its change, even when
//     the read is on another shard;
//   - reply header zxids never decrease, and a session that moves to another server keeps its
//     new connection;
//   - setWatches after a reconnect misses no change on any shard;
//   - ephemerals on every shard die with their session (close, expiry, a create racing the
//     expiry);
//   - a cross-shard transaction whose coordinator dies leaves no shard blocked and is applied on
//     all participants or on none.
//
// Every test runs twice, as the subtests "inprocess" (three cluster.Servers in the test process,
// internal/testcluster) and "multiprocess" (three `corral server` processes started from their
// own zoo.cfg, internal/corralproc; skipped under -short), each with an ensemble of its own
// (ensemble_test.go).
//
// Replicas are made to lag with the test hook router.Shard.SetApplyLag (a corraltesting build's;
// `make test` builds the tests with the tag, and without it the tests that need a lag skip), so
// that an implementation that broke a guarantee would be caught: each test says how it would
// fail. A
// separate process — a corraltesting build, which internal/corralproc chooses when a test
// asks for test knobs (internal/testknobs) — sets the hook from its environment at startup, so in
// both modes a replica lags from the start of the ensemble to its end. Stopping a server closes
// it in process and kills it (SIGKILL) as a process. What only in-process servers show (how far
// a replica lags, which shards hold a transaction prepared) is logged there, never checked.
//
// Clients are go-zookeeper sessions, and Corral's own client (package client) where
// go-zookeeper cannot express the test (pipelined asynchronous requests, create2, per-op multi
// results). A small TCP proxy between client and server moves sessions between servers, cuts or
// freezes connections without closing the session, and records reply header zxids.
package shardstest

// Package difftest is Corral's differential-testing machinery: it runs the
// same script of ZooKeeper operations against an oracle (Apache ZooKeeper,
// started with internal/apachezk) and a candidate (Corral), and reports the
// first step where their observable results differ.
//
// # Model
//
// A [Target] is a ZooKeeper-protocol endpoint (connect string) with a name.
// A [Script] is a sequence of [Step]s; each step names a logical client
// (0 or 1, one session each, opened lazily, reopened after
// [OpCloseSession]) and an operation: create in every mode 0..6 (TTL
// included), delete/setData/setACL with versions, exists/getData/
// getChildren/getChildren2 with optional watches, getACL, multi (including
// failing ones, with per-op results), sync, addAuth digest, event collection
// and session close. Steps run through github.com/go-zookeeper/zk. Operations
// go-zookeeper cannot send (create2, addWatch, multiRead, getEphemerals,
// whoAmI, ...) go through [OpRaw]: a [RawFunc] that receives the target
// address and returns a [Result].
//
// # Raw-wire steps
//
// [RawConn] speaks the protocol through package wire: any opcode and record,
// replies undecoded, notifications collected in arrival order. A script keeps
// raw sessions by name on each target ([RawOpen], [RawConnect], [RawResume]
// after [RawDrop]) and uses them in later steps: [RawOn] for anything, and
// helpers for each opcode ([RCreate] with create, create2, createContainer
// and createTTL, [RMultiRead], [RGetEphemerals], [RAllChildren],
// [RAddWatch], [RCheckWatches], [RRemoveWatches], [RSetWatches2],
// [RWhoAmI], [RAuth], [RRequest] for reconfig, sasl and unknown opcodes).
// [RawEvents] collects a raw session's events behind the same barrier as
// [OpEvents]; at the end of a script the events still due on every raw
// session are compared too, then the sessions are closed. Paths inside raw
// steps go through [AbsPath] ("=" prefix: literal) and [RelPath]; handshake
// results report the connect response with the session id paired and, for a
// resumed session, the id and password as same/zero/other.
//
// [RawScripts] are the fixed raw-wire scripts; [KnownDifferenceScripts] show
// the differences Corral keeps on purpose or has not removed (they fail
// against Corral; tests/diff runs them with DIFFTEST_KNOWN=1).
//
// Each run creates a fresh top-level node (the same name on both targets)
// and maps script paths under it, so runs never see each other's nodes and
// can run in parallel against the same servers.
//
// # Comparison
//
// Steps run in lockstep (oracle, then candidate) and each pair of results is
// compared by a [Comparator]: errors, paths, data (null ≠ empty), sorted
// children, ACLs, multi results and per-client event sequences exactly;
// stat fields with normalisation — zxids through an order-preserving
// bijection learned on first sight, ephemeralOwner through the session
// pairing, ctime/mtime only through their consistency with zxids (see
// [Comparator]); versions, cversion, aversion, dataLength, numChildren
// exactly. Events are collected deterministically: [OpEvents] first runs a
// barrier on the client (sync + read), relying on ZooKeeper's guarantee that
// a watch event is delivered before any reply reflecting the change.
//
// # Using it from a Corral test
//
//	zk, _ := apachezk.Start(ctx, apachezk.Options{JVMFlags: []string{
//		apachezk.FlagExtendedTypes, apachezk.FlagSuperDigest, apachezk.FlagNoContainerGC}})
//	defer zk.Close()
//	oracle := difftest.Target{Name: "apache-zk", Connect: zk.ConnectString()}
//	candidate := difftest.Target{Name: "corral", Connect: corralAddr}
//	for _, s := range difftest.Scripts() {
//		t.Run(s.Name, func(t *testing.T) { difftest.Run(t, oracle, candidate, s) })
//	}
//	difftest.Run(t, oracle, candidate, difftest.RandomScript(seed, 300))
//
// On a mismatch the test fails with a report naming the step, the field, both
// results, the preceding steps and (for random scripts) the seed to replay.
// Set DIFFTEST_TRACE=1 to log every step. [Execute] returns the [Report]
// instead of failing a test.
//
// Requirements on the targets: TTL nodes enabled (the fixed scripts create
// them); container and TTL reaping must not run during a run (they are
// time-driven, so two servers would reap at different steps: Apache
// ZooKeeper gets apachezk.FlagNoContainerGC, a candidate needs an equivalent
// knob or a long check interval); all clients of a run use the first address
// of the connect string, so that cross-session reads are not stale.
//
// The package's own tests run everything with Apache ZooKeeper on both sides;
// they must agree, which is what proves the normalisation right.
package difftest

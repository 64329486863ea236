package difftest

import (
	"context"
	"fmt"
	"time"

	"github.com/corral/corral/wire"
)

// RawScripts returns the fixed scripts for the opcodes and protocol details
// go-zookeeper cannot produce, driven through raw sessions (RawConn):
// create2/createContainer/createTTL with their Create2Response, multiRead,
// getEphemerals, getAllChildrenNumber, addWatch with the events persistent
// and recursive watches deliver, checkWatches/removeWatches per watcher
// type, setWatches2 after a reconnect, whoAmI, reconfig, sasl, an unknown
// opcode, and handshake variants. Like Scripts they need TTL nodes enabled;
// the handshake script expects the targets to clamp session timeouts the
// same way (the same tickTime).
func RawScripts() []Script {
	return []Script{
		rawCreateScript(),
		rawMultiReadScript(),
		rawEphemeralsScript(),
		rawAllChildrenScript(),
		rawPersistentWatchScript(),
		rawRecursiveWatchScript(),
		rawWatchModesScript(),
		rawRemoveWatchesScript(),
		rawSetWatches2Script(),
		rawHandshakeScript(),
		rawReconnectScript(),
		rawMiscOpsScript(),
		rawDeleteContainerScript(),
		rawMultiCreateScript(),
		rawCloseOrderScript(),
	}
}

// rawMultiCreateScript sends multi (14) with the create opcodes go-zookeeper
// cannot put in one: create2, createContainer, createTTL, and plain creates
// with container and TTL flags. Results record their type.
func rawMultiCreateScript() Script {
	const raw = "r"
	create := func(op wire.OpCode, path string, flags int32, ttl int64) func(ctx context.Context) wire.MultiOp {
		return func(ctx context.Context) wire.MultiOp {
			p := AbsPath(ctx, path)
			if op == wire.OpCreateTTL {
				return wire.MultiOp{Op: op, CreateTTL: &wire.CreateTTLRequest{Path: p, ACL: wire.OpenACLUnsafe, Flags: flags, TTL: ttl}}
			}
			return wire.MultiOp{Op: op, Create: &wire.CreateRequest{Path: p, ACL: wire.OpenACLUnsafe, Flags: flags}}
		}
	}
	multi := func(label string, ops ...func(ctx context.Context) wire.MultiOp) Step {
		return RMultiOps(raw, wire.OpMulti, label, func(ctx context.Context) []wire.MultiOp {
			out := make([]wire.MultiOp, len(ops))
			for i, o := range ops {
				out[i] = o(ctx)
			}
			return out
		})
	}
	return Script{Name: "raw-multi-creates", Steps: []Step{
		Create(0, "/u", nil, 0),
		RawOpen(raw, false),
		multi("[create2 /u/a; create2 /u/s- seq]",
			create(wire.OpCreate2, "/u/a", 0, 0), create(wire.OpCreate2, "/u/s-", 2, 0)),
		multi("[createContainer /u/k; createTTL /u/t]",
			create(wire.OpCreateContainer, "/u/k", 4, 0), create(wire.OpCreateTTL, "/u/t", 5, hour)),
		multi("[create /u/pk container flag]", create(wire.OpCreate, "/u/pk", 4, 0)),
		multi("[create /u/a2; create /u/pt TTL flag]", create(wire.OpCreate, "/u/a2", 0, 0), create(wire.OpCreate, "/u/pt", 5, 0)),
		multi("[create2 /u/pt2 TTL flag]", create(wire.OpCreate2, "/u/pt2", 5, 0)),
		multi("[createTTL /u/t0 ttl=0]", create(wire.OpCreateTTL, "/u/t0", 5, 0)),
		multi("[createTTL /u/tp flags=0]", create(wire.OpCreateTTL, "/u/tp", 0, hour)),
		multi("[createTTL /u/tk flags=4]", create(wire.OpCreateTTL, "/u/tk", 4, hour)),
		multi("[createTTL /u/te flags=1]", create(wire.OpCreateTTL, "/u/te", 1, hour)),
		multi("[createTTL /u/ts- flags=2]", create(wire.OpCreateTTL, "/u/ts-", 2, 0)),
		multi("[createTTL /u/t7 flags=7]", create(wire.OpCreateTTL, "/u/t7", 7, hour)),
		multi("[createTTL /u/tn flags=-1 ttl=-1]", create(wire.OpCreateTTL, "/u/tn", -1, -1)),
		multi("[createContainer /u/k0 flags=0]", create(wire.OpCreateContainer, "/u/k0", 0, 0)),
		multi("[createContainer /u/k7 flags=7]", create(wire.OpCreateContainer, "/u/k7", 7, 0)),
		multi("[create2 /u/c7 flags=7]", create(wire.OpCreate2, "/u/c7", 7, 0)),
		multi("[create2 /u/b; createTTL /u/t exists]", create(wire.OpCreate2, "/u/b", 0, 0), create(wire.OpCreateTTL, "/u/t", 5, hour)),
		multi("[create2 /u/e ephemeral; createContainer /u/e/k]",
			create(wire.OpCreate2, "/u/e", 1, 0), create(wire.OpCreateContainer, "/u/e/k", 4, 0)),
		Children2(0, "/u", false),
		Get(0, "/u/k", false),
		Get(0, "/u/t", false),
		Get(0, "/u/pk", false),
		Get(0, "/u/k0", false),
		Exists(0, "/u/tk", false),
		Exists(0, "/u/te", false),
		Exists(0, "/u/t7", false),
		RawCloseSession(raw),
	}}
}

// rawCloseOrderScript closes sessions holding 5 and 20 ephemerals under a
// recursive watch: ZooKeeper deletes them, and fires their events, in the
// iteration order of a clone of its per-session HashSet.
func rawCloseOrderScript() Script {
	steps := []Step{
		Create(0, "/o", nil, 0),
		RawOpen("w", false),
		RAddWatch("w", "/o", wire.AddWatchPersistentRecursive),
		RawOpen("five", false),
		RawOpen("twenty", false),
	}
	for i := 0; i < 5; i++ {
		steps = append(steps, RCreate("five", wire.OpCreate, fmt.Sprintf("/o/f%d", i), nil, 1, 0))
	}
	for i := 0; i < 20; i++ {
		steps = append(steps, RCreate("twenty", wire.OpCreate, fmt.Sprintf("/o/t/%c", 'a'+i), nil, 1, 0))
		if i == 0 {
			steps = append(steps[:len(steps)-1], Create(0, "/o/t", nil, 0), steps[len(steps)-1])
		}
	}
	steps = append(steps,
		RawEvents("w", 0),
		RawCloseSession("five"),
		RawEvents("w", 0),
		RawCloseSession("twenty"),
		RawEvents("w", 0),
		RawCloseSession("w"),
	)
	return Script{Name: "raw-close-order", Steps: steps}
}

const hour = int64(time.Hour / time.Millisecond)

func rawCreateScript() Script {
	const (
		c2  = wire.OpCreate2
		cc  = wire.OpCreateContainer
		ct  = wire.OpCreateTTL
		c1  = wire.OpCreate
		raw = "r"
	)
	return Script{Name: "raw-create", Steps: []Step{
		Create(0, "/c", nil, 0),
		RawOpen(raw, true),
		RCreate(raw, c2, "/c/a", b("a"), 0, 0),
		RCreate(raw, c2, "/c/null", nil, 0, 0),
		RCreate(raw, c2, "/c/e", b("e"), 1, 0), // ephemeralOwner: the raw session
		RCreate(raw, c2, "/c/s-", nil, 2, 0),
		RCreate(raw, c2, "/c/es-", b("x"), 3, 0),
		RCreate(raw, c2, "/c/k", nil, 4, 0), // container flag through create2
		RCreate(raw, c2, "/c/t", nil, 5, 0), // TTL flag through create2
		RCreate(raw, c2, "/c/ts-", nil, 6, 0),
		RCreate(raw, c2, "/c/a", nil, 0, 0),       // NODEEXISTS
		RCreate(raw, c2, "/c/x/y", nil, 0, 0),     // NONODE
		RCreate(raw, c2, "/c/e/kid", nil, 0, 0),   // NOCHILDRENFOREPHEMERALS
		RCreate(raw, c2, "/c/bad", nil, 7, 0),     // unknown flags
		RCreate(raw, c2, "/c/bad", nil, -1, 0),    // unknown flags
		RCreate(raw, c2, "c/relative", nil, 0, 0), // bad path
		RCreate(raw, c2, "/c/trailing/", nil, 0, 0),
		RCreate(raw, c2, "/c/s-", nil, 2, 0), // sequential again: the counter moved on
		RCreate(raw, c1, "/c/plain", b("p"), 0, 0),
		RCreate(raw, c1, "/c/plain-k", nil, 4, 0), // plain create, container flag
		RCreate(raw, c1, "/c/plain-t", nil, 5, 0), // plain create, TTL flag
		RCreate(raw, cc, "/c/cont", b("c"), 4, 0),
		RCreate(raw, cc, "/c/cont0", nil, 0, 0), // createContainer with other flags
		RCreate(raw, cc, "/c/cont1", nil, 1, 0),
		RCreate(raw, cc, "/c/cont2", nil, 2, 0),
		RCreate(raw, cc, "/c/cont", nil, 4, 0), // NODEEXISTS
		RCreate(raw, ct, "/c/ttl", b("t"), 5, hour),
		RCreate(raw, ct, "/c/ttlseq-", nil, 6, hour),
		RCreate(raw, ct, "/c/ttl0", nil, 5, 0),
		RCreate(raw, ct, "/c/ttlneg", nil, 5, -1),
		RCreate(raw, ct, "/c/ttlmax", nil, 5, wire.MaxTTL),
		RCreate(raw, ct, "/c/ttlover", nil, 5, wire.MaxTTL+1),
		RCreate(raw, ct, "/c/ttlp", nil, 0, hour), // createTTL with other flags
		RCreate(raw, ct, "/c/ttle", nil, 1, hour),
		RCreate(raw, ct, "/c/ttlc", nil, 4, hour),
		RCreate(raw, ct, "/c/ttl", nil, 5, hour), // NODEEXISTS
		RCreate(raw, ct, "/c/nope/ttl", nil, 5, hour),
		// Which check wins when several fail.
		RCreate(raw, ct, "/c/nope/ttl0", nil, 5, 0),             // no parent, bad ttl
		RCreate(raw, ct, "/c/ttl", nil, 0, hour),                // exists, wrong flags
		RCreate(raw, ct, "/c/e/ttl", nil, 5, hour),              // ephemeral parent
		RCreate(raw, cc, "/c/e/k", nil, 4, 0),                   // ephemeral parent
		RCreate(raw, c2, "/c/nope/s-", nil, 2, 0),               // sequential, no parent
		RCreate(raw, c2, "/c/a", nil, 9, 0),                     // exists, bad flags
		RCreateACL(raw, ct, "/c/ttl", nil, 5, hour, EmptyACL()), // exists, empty ACL
		RCreateACL(raw, ct, "/c/ttlacl", nil, 5, 0, EmptyACL()), // bad ttl, empty ACL
		RCreateACL(raw, cc, "/c/kacl", nil, 4, 0, EmptyACL()),   // empty ACL
		RCreateACL(raw, cc, "/c/kauth", nil, 4, 0, AuthACL(31)), // auth ACL, no identity
		RCreateACL(raw, c2, "/c/nope/x", nil, 0, 0, EmptyACL()), // no parent, empty ACL
		RCreateACL(raw, c2, "/c/world", nil, 0, 0, []ACL{{31, "world", "someone"}}),
		CreateACL(0, "/c/ro", nil, 0, WorldACL(PermRead)),
		RCreate(raw, ct, "/c/ro/ttl", nil, 5, hour), // NOAUTH
		RCreate(raw, ct, "/c/ro/ttl0", nil, 5, 0),   // NOAUTH or BADARGUMENTS
		RCreate(raw, cc, "/c/ro/k", nil, 4, 0),
		RCreate(raw, c2, "/c/ro/s-", nil, 2, 0),
		Children2(0, "/c", false),
		Exists(0, "/c/e", false),
		Get(0, "/c/k", false),
		Get(0, "/c/ttl", false),
		Get(0, "/c/cont", false),
		RawCloseSession(raw),
		Children2(0, "/c", false), // the raw session's ephemerals are gone
	}}
}

func rawMultiReadScript() Script {
	const raw = "r"
	return Script{Name: "raw-multiread", Steps: []Step{
		Create(0, "/m", b("root"), 0),
		Create(0, "/m/a", b("A"), 0),
		Create(0, "/m/a/x", nil, 0),
		Create(0, "/m/a/y", b(""), 0),
		Create(0, "/m/b", nil, 0),
		CreateACL(0, "/m/secret", b("s"), 0, DigestACL(PermAll, userAlice)),
		Create(0, "/m/wo", b("w"), 0),
		SetACL(0, "/m/wo", WorldACL(PermWrite|PermCreate|PermDelete|PermAdmin), -1),
		RawOpen(raw, false),
		RMultiRead(raw,
			ReadData("/m/a", false), ReadChildren("/m/a", false),
			ReadData("/m/missing", false), ReadChildren("/m/missing", false),
			ReadData("/m/b", false), ReadData("/m/a/y", false),
			ReadData("/m/secret", false), ReadChildren("/m/secret", false),
			ReadData("/m/wo", false), ReadChildren("/m/wo", false),
			ReadData("/m", false), ReadChildren("/m", false)),
		RMultiRead(raw), // empty
		RMultiRead(raw, ReadData("m/relative", false), ReadChildren("m", false), ReadData("/m/a/", false)),
		RAuth(raw, "digest", userAlice),
		RMultiRead(raw, ReadData("/m/secret", false), ReadChildren("/m/secret", false)),
		// Watches set through multiRead, on existing and missing nodes.
		RMultiRead(raw, ReadData("/m/a", true), ReadChildren("/m", true), ReadData("/m/missing", true),
			ReadChildren("/m/missing2", true), ReadChildren("/m/a/x", true)),
		Set(0, "/m/a", b("A2"), -1),
		Create(0, "/m/missing", nil, 0),
		Create(0, "/m/missing2", nil, 0),
		Create(0, "/m/a/x/kid", nil, 0),
		Set(0, "/m/a", b("A3"), -1), // fired already
		RawEvents(raw, 0),
		// A multiRead holding a write, a multi holding reads, a mix.
		RMultiOps(raw, wire.OpMultiRead, "[getData /m/a; create /m/w]", func(ctx context.Context) []wire.MultiOp {
			return []wire.MultiOp{
				{Op: wire.OpGetData, GetData: &wire.GetDataRequest{Path: AbsPath(ctx, "/m/a")}},
				{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: AbsPath(ctx, "/m/w"), ACL: wire.OpenACLUnsafe}},
			}
		}),
		RMultiOps(raw, wire.OpMultiRead, "[create /m/w]", func(ctx context.Context) []wire.MultiOp {
			return []wire.MultiOp{
				{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: AbsPath(ctx, "/m/w"), ACL: wire.OpenACLUnsafe}},
			}
		}),
		RMultiOps(raw, wire.OpMulti, "[getData /m/a]", func(ctx context.Context) []wire.MultiOp {
			return []wire.MultiOp{{Op: wire.OpGetData, GetData: &wire.GetDataRequest{Path: AbsPath(ctx, "/m/a")}}}
		}),
		Exists(0, "/m/w", false),
		RMultiRead(raw, ReadData("/m/a", false)), // the connection still works
		RawCloseSession(raw),
	}}
}

func rawEphemeralsScript() Script {
	const raw = "r"
	return Script{Name: "raw-getephemerals", Steps: []Step{
		Create(0, "/g", nil, 0),
		Create(0, "/g/a", nil, 0),
		Create(0, "/g/a/b", nil, 0),
		RawOpen(raw, false),
		RGetEphemerals(raw, "/"), // none yet
		RCreate(raw, wire.OpCreate2, "/g/e1", nil, 1, 0),
		RCreate(raw, wire.OpCreate2, "/g/e10", nil, 1, 0),
		RCreate(raw, wire.OpCreate2, "/g/a/e2", b("2"), 1, 0),
		RCreate(raw, wire.OpCreate2, "/g/a/b/e3-", nil, 3, 0),
		RCreate(raw, wire.OpCreate, "/g/a/e4", nil, 1, 0),
		RCreate(raw, wire.OpCreate2, "/g/a/p", nil, 0, 0), // persistent: not listed
		Create(1, "/g/other", nil, 1),                     // another session's ephemeral
		Create(1, "/g/a/other", nil, 3),
		RGetEphemerals(raw, "/"),
		RGetEphemerals(raw, "="),  // empty prefix: all
		RGetEphemerals(raw, "=/"), // the root: all
		RGetEphemerals(raw, "= "), // blank: all
		RGetEphemerals(raw, "/g"),
		RGetEphemerals(raw, "/g/e1"), // a string prefix: /g/e1 and /g/e10
		RGetEphemerals(raw, "/g/e10"),
		RGetEphemerals(raw, "/g/a"),
		RGetEphemerals(raw, "/g/a/"),
		RGetEphemerals(raw, "/g/a/b/e3-"),
		RGetEphemerals(raw, "/g/a/e"),
		RGetEphemerals(raw, "/g/other"),
		RGetEphemerals(raw, "/nothing"),
		RGetEphemerals(raw, "=g/a"),
		Delete(0, "/g/e10", -1), // deleted by another session
		RGetEphemerals(raw, "/g"),
		RSet(raw, "/g/e1", b("changed"), -1),
		RGetEphemerals(raw, "/g/e"),
		RawCloseSession(raw),
		Children2(0, "/g", false),
		Children2(0, "/g/a", false),
		RawOpen("r2", false),
		RGetEphemerals("r2", "/"), // a fresh session owns none
	}}
}

func rawAllChildrenScript() Script {
	const raw = "r"
	return Script{Name: "raw-getallchildrennumber", Steps: []Step{
		Create(0, "/n", nil, 0),
		RawOpen(raw, false),
		RAllChildren(raw, "/n"),
		Create(0, "/n/a", nil, 0),
		Create(0, "/n/a/b", nil, 0),
		Create(0, "/n/a/b/c", nil, 0),
		Create(0, "/n/a/b/c/d", nil, 0),
		Create(0, "/n/a/b2", nil, 0),
		Create(0, "/n/ab", nil, 0), // a sibling sharing a name prefix
		Create(0, "/n/s-", nil, 2),
		Create(1, "/n/a/e", nil, 1),
		Create(0, "/n/k", nil, 4),
		CreateTTL(0, "/n/k/t", nil, 5, scriptTTL),
		RAllChildren(raw, "/"),
		RAllChildren(raw, "/n"),
		RAllChildren(raw, "/n/a"),
		RAllChildren(raw, "/n/a/b"),
		RAllChildren(raw, "/n/a/b/c/d"),
		RAllChildren(raw, "/n/ab"),
		RAllChildren(raw, "/n/k"),
		RAllChildren(raw, "/n/missing"),
		RAllChildren(raw, "/n/a/"),
		RAllChildren(raw, "=n"),
		RAllChildren(raw, "=/zookeeper"),
		RAllChildren(raw, "=/zookeeper/quota"),
		CloseSession(1), // its ephemeral goes
		Delete(0, "/n/a/b/c/d", -1),
		RAllChildren(raw, "/n"),
		RAllChildren(raw, "/n/a"),
		// READ is required on the node itself.
		Create(0, "/n/locked", nil, 0),
		Create(0, "/n/locked/x", nil, 0),
		SetACL(0, "/n/locked", WorldACL(PermAll&^PermRead), -1),
		RAllChildren(raw, "/n/locked"),
		RAllChildren(raw, "/n/locked/x"),
		RAllChildren(raw, "/n"),
		CreateACL(0, "/n/alice", nil, 0, DigestACL(PermAll, userAlice)),
		RAllChildren(raw, "/n/alice"),
		RAuth(raw, "digest", userAlice),
		RAllChildren(raw, "/n/alice"),
		RawCloseSession(raw),
	}}
}

func rawPersistentWatchScript() Script {
	const raw = "r"
	return Script{Name: "raw-addwatch-persistent", Steps: []Step{
		Create(0, "/w", nil, 0),
		RawOpen(raw, false),
		RAddWatch(raw, "/w/p", wire.AddWatchPersistent), // the node does not exist yet
		RCheckWatches(raw, "/w/p", wire.WatcherData),
		RCheckWatches(raw, "/w/p", wire.WatcherChildren),
		RCheckWatches(raw, "/w/p", wire.WatcherAny),
		Create(0, "/w/p", b("1"), 0),
		Set(0, "/w/p", b("2"), -1),
		Create(0, "/w/p/c", nil, 0),
		Set(0, "/w/p/c", b("x"), -1), // a child's data: not watched
		Create(0, "/w/p/c/g", nil, 0),
		Delete(0, "/w/p/c/g", -1),
		Delete(0, "/w/p/c", -1),
		Create(0, "/w/sibling", nil, 0),
		RawEvents(raw, 0),
		// The watch survives the node's deletion and sees it come back.
		Delete(0, "/w/p", -1),
		Create(0, "/w/p", nil, 0),
		Set(0, "/w/p", b("3"), -1),
		Multi(0, Create(0, "/w/p/m1", nil, 0), Set(0, "/w/p", b("4"), -1), Create(0, "/w/p/m2", nil, 0)),
		Multi(0, Create(0, "/w/p/m3", nil, 0), Create(0, "/w/p/m1", nil, 0)), // fails: no events
		RawEvents(raw, 0),
		// The watcher's own changes notify it too, before its reply.
		RSet(raw, "/w/p", b("5"), -1),
		RCreate(raw, wire.OpCreate2, "/w/p/own", nil, 1, 0),
		RDelete(raw, "/w/p/own", -1),
		RawEvents(raw, 0),
		// Ephemerals owned by another session go with it.
		Create(0, "/w/p/e", nil, 1),
		Delete(0, "/w/p/m1", -1),
		Delete(0, "/w/p/m2", -1),
		Create(0, "/w/p2", nil, 1),
		RawEvents(raw, 0),
		Delete(1, "/w/p", -1), // NOTEMPTY
		CloseSession(0),
		Delete(1, "/w/p", -1),
		Create(1, "/w/p", nil, 1),
		CloseSession(1),
		RawEvents(raw, 0),
		// A second addWatch on the same path changes nothing.
		RAddWatch(raw, "/w/p", wire.AddWatchPersistent),
		Create(1, "/w/p", nil, 0),
		RawEvents(raw, 0),
		// removeWatches per type: Data first, then the rest.
		RRemoveWatches(raw, "/w/p", wire.WatcherData),
		Set(1, "/w/p", b("6"), -1),
		Create(1, "/w/p/k", nil, 0),
		RawEvents(raw, 0),
		RCheckWatches(raw, "/w/p", wire.WatcherData),
		RCheckWatches(raw, "/w/p", wire.WatcherChildren),
		RRemoveWatches(raw, "/w/p", wire.WatcherData), // NOWATCHER
		RRemoveWatches(raw, "/w/p", wire.WatcherChildren),
		RRemoveWatches(raw, "/w/p", wire.WatcherAny), // NOWATCHER
		Create(1, "/w/p/k2", nil, 0),
		Delete(1, "/w/p/k2", -1),
		RawEvents(raw, 50*time.Millisecond),
		// Removed with Any in one go.
		RAddWatch(raw, "/w/p", wire.AddWatchPersistent),
		RRemoveWatches(raw, "/w/p", wire.WatcherAny),
		RCheckWatches(raw, "/w/p", wire.WatcherAny),
		Set(1, "/w/p", b("7"), -1),
		// Modes and paths ZooKeeper does not accept.
		RAddWatch(raw, "/w/p", 2),
		RAddWatch(raw, "/w/p", -1),
		RAddWatch(raw, "w/relative", wire.AddWatchPersistent),
		RAddWatch(raw, "=", wire.AddWatchPersistent),
		RawEvents(raw, 50*time.Millisecond),
		RawCloseSession(raw),
	}}
}

func rawRecursiveWatchScript() Script {
	const raw = "r"
	return Script{Name: "raw-addwatch-recursive", Steps: []Step{
		Create(0, "/w", nil, 0),
		RawOpen(raw, false),
		RAddWatch(raw, "/w/r", wire.AddWatchPersistentRecursive),
		Create(0, "/w/r", nil, 0),
		Create(0, "/w/r/a", nil, 0),
		Create(0, "/w/r/a/b", b("1"), 0),
		Set(0, "/w/r/a/b", b("2"), -1),
		Create(0, "/w/r/a/b/c", nil, 1),
		Delete(0, "/w/r/a/b/c", -1),
		Create(0, "/w/r-sibling", nil, 0), // shares a name prefix, outside the subtree
		Create(0, "/w/r-sibling/x", nil, 0),
		Set(0, "/w/r", b("top"), -1),
		SetACL(0, "/w/r/a", WorldACL(PermAll), -1), // ACL changes fire nothing
		RawEvents(raw, 0),
		RCheckWatches(raw, "/w/r", wire.WatcherData),
		RCheckWatches(raw, "/w/r", wire.WatcherChildren),
		RCheckWatches(raw, "/w/r/a", wire.WatcherAny), // a descendant: no watch of its own
		Multi(0, Create(0, "/w/r/m", nil, 2), Delete(0, "/w/r/a/b", -1), Set(0, "/w/r/a", b("m"), -1)),
		RawEvents(raw, 0),
		// A one-shot watch by the same session on a watched descendant.
		RGet(raw, "/w/r/a", true),
		Set(0, "/w/r/a", b("x"), -1),
		Set(0, "/w/r/a", b("y"), -1),
		RawEvents(raw, 0),
		// Nested recursive watches on the same session: one event per change.
		RAddWatch(raw, "/w/r/a", wire.AddWatchPersistentRecursive),
		Create(0, "/w/r/a/n", nil, 0),
		Set(0, "/w/r/a/n", b("1"), -1),
		RawEvents(raw, 0),
		// A persistent (non-recursive) watch inside the subtree: the same.
		RAddWatch(raw, "/w/r/a/n", wire.AddWatchPersistent),
		Create(0, "/w/r/a/n/k", nil, 0),
		Set(0, "/w/r/a/n", b("2"), -1),
		RawEvents(raw, 0),
		// Deleting the whole subtree, bottom up.
		Delete(0, "/w/r/a/n/k", -1),
		Delete(0, "/w/r/a/n", -1),
		RRemoveWatches(raw, "/w/r/a", wire.WatcherAny),
		Delete(0, "/w/r/a", -1),
		RawEvents(raw, 0),
		RRemoveWatches(raw, "/w/r", wire.WatcherChildren),
		Create(0, "/w/r/z", nil, 0),
		Set(0, "/w/r", b("after child removal"), -1),
		RawEvents(raw, 0),
		RRemoveWatches(raw, "/w/r", wire.WatcherData),
		Create(0, "/w/r/z2", nil, 0),
		Set(0, "/w/r", b("gone"), -1),
		RawEvents(raw, 50*time.Millisecond),
		// A recursive watch on the run's prefix sees everything below it.
		RAddWatch(raw, "/", wire.AddWatchPersistentRecursive),
		Create(0, "/deep", nil, 0),
		Create(0, "/deep/er", nil, 1),
		CloseSession(0),
		RawEvents(raw, 0),
		RawCloseSession(raw),
	}}
}

// rawWatchModesScript mixes one-shot and persistent watches of one session
// on one path: ZooKeeper 3.8.0 keeps one mode per (connection, path) and
// table, so a later registration replaces the earlier one.
func rawWatchModesScript() Script {
	const raw = "r"
	return Script{Name: "raw-watch-modes", Steps: []Step{
		Create(0, "/q", nil, 0),
		Create(0, "/q/a", b("1"), 0),
		RawOpen(raw, false),
		RAddWatch(raw, "/q/a", wire.AddWatchPersistent),
		RGet(raw, "/q/a", true), // a one-shot data watch on top
		Set(0, "/q/a", b("2"), -1),
		Set(0, "/q/a", b("3"), -1),
		Create(0, "/q/a/c", nil, 0),
		Create(0, "/q/a/c2", nil, 0),
		RawEvents(raw, 0),
		RChildren(raw, "/q/a", true), // a one-shot child watch on top
		Create(0, "/q/a/c3", nil, 0),
		Create(0, "/q/a/c4", nil, 0),
		Set(0, "/q/a", b("4"), -1),
		RawEvents(raw, 0),
		// The other order: one-shot first, then persistent.
		Create(0, "/q/b", nil, 0),
		RGet(raw, "/q/b", true),
		RAddWatch(raw, "/q/b", wire.AddWatchPersistent),
		Set(0, "/q/b", b("1"), -1),
		Set(0, "/q/b", b("2"), -1),
		RawEvents(raw, 0),
		// Recursive, then a persistent on the same path.
		Create(0, "/q/r", nil, 0),
		RAddWatch(raw, "/q/r", wire.AddWatchPersistentRecursive),
		RAddWatch(raw, "/q/r", wire.AddWatchPersistent),
		Create(0, "/q/r/x", nil, 0),
		Set(0, "/q/r/x", b("1"), -1),
		Set(0, "/q/r", b("1"), -1),
		RawEvents(raw, 0),
		// exists with a watch on a missing node under a persistent watch.
		RAddWatch(raw, "/q/m", wire.AddWatchPersistent),
		RExists(raw, "/q/m", true),
		Create(0, "/q/m", nil, 0),
		Set(0, "/q/m", b("1"), -1),
		RawEvents(raw, 0),
		RawCloseSession(raw),
	}}
}

func rawRemoveWatchesScript() Script {
	const raw = "r"
	return Script{Name: "raw-remove-check-watches", Steps: []Step{
		Create(0, "/x", nil, 0),
		Create(0, "/x/d", b("d"), 0),
		RawOpen(raw, false),
		RGet(raw, "/x/d", true),       // data watch
		RExists(raw, "/x/none", true), // exist watch (missing node)
		RChildren(raw, "/x", true),    // child watch
		RCheckWatches(raw, "/x/d", wire.WatcherChildren),
		RCheckWatches(raw, "/x/d", wire.WatcherData),
		RCheckWatches(raw, "/x/d", wire.WatcherAny),
		RCheckWatches(raw, "/x/none", wire.WatcherData),
		RCheckWatches(raw, "/x/none", wire.WatcherChildren),
		RCheckWatches(raw, "/x", wire.WatcherChildren),
		RCheckWatches(raw, "/x", wire.WatcherData),
		RCheckWatches(raw, "/x/missing", wire.WatcherAny),
		RCheckWatches(raw, "/x/d", 0),
		RCheckWatches(raw, "/x/d", 4),
		RCheckWatches(raw, "/x/d", 5),
		RCheckWatches(raw, "x/relative", wire.WatcherAny),
		// Another session's watch counts for checkWatches in 3.8.0, not for removeWatches.
		Children(0, "/x/d", true),
		RCheckWatches(raw, "/x/d", wire.WatcherChildren),
		RRemoveWatches(raw, "/x/d", wire.WatcherChildren),
		RRemoveWatches(raw, "/x/d", wire.WatcherData),
		RRemoveWatches(raw, "/x/d", wire.WatcherData), // gone
		RCheckWatches(raw, "/x/d", wire.WatcherData),
		Set(0, "/x/d", b("e"), -1),
		RRemoveWatches(raw, "/x/none", wire.WatcherAny),
		RRemoveWatches(raw, "/x", wire.WatcherData),
		RRemoveWatches(raw, "/x", wire.WatcherChildren),
		RRemoveWatches(raw, "/x/missing", wire.WatcherAny),
		RRemoveWatches(raw, "/x/d", 0),
		RRemoveWatches(raw, "/x/d", 4),
		RRemoveWatches(raw, "/x/d", 5),
		Create(0, "/x/none", nil, 0),
		Create(0, "/x/k", nil, 0),
		RawEvents(raw, 50*time.Millisecond),
		// A fired one-shot watch is gone.
		RGet(raw, "/x/d", true),
		Set(0, "/x/d", b("f"), -1),
		RawEvents(raw, 0),
		RCheckWatches(raw, "/x/d", wire.WatcherData),
		RRemoveWatches(raw, "/x/d", wire.WatcherData),
		Events(0),
		RawCloseSession(raw),
	}}
}

func rawSetWatches2Script() Script {
	const raw, back = "r", "r2"
	return Script{Name: "raw-setwatches2-reconnect", Steps: []Step{
		Create(0, "/s", nil, 0),
		Create(0, "/s/d", b("d"), 0),
		Create(0, "/s/same", b("x"), 0),
		Create(0, "/s/gone", nil, 0),
		Create(0, "/s/kids", nil, 0),
		Create(0, "/s/quiet", nil, 0),
		Create(0, "/s/dead", nil, 0),
		Create(0, "/s/p", nil, 0),
		Create(0, "/s/r", nil, 0),
		RawOpen(raw, false),
		RGet(raw, "/s/d", true),
		RGet(raw, "/s/same", true),
		RGet(raw, "/s/gone", true),
		RExists(raw, "/s/new", true),
		RExists(raw, "/s/never", true),
		RChildren(raw, "/s/kids", true),
		RChildren(raw, "/s/quiet", true),
		RChildren(raw, "/s/dead", true),
		RAddWatch(raw, "/s/p", wire.AddWatchPersistent),
		RAddWatch(raw, "/s/r", wire.AddWatchPersistentRecursive),
		RawEvents(raw, 0),
		RawDrop(raw),
		// Changes while the client is away.
		Set(0, "/s/d", b("d2"), -1),
		Delete(0, "/s/gone", -1),
		Create(0, "/s/new", nil, 0),
		Create(0, "/s/kids/k", nil, 0),
		Delete(0, "/s/dead", -1),
		Set(0, "/s/p", b("p2"), -1),
		Create(0, "/s/p/c", nil, 0),
		Create(0, "/s/r/x", nil, 0),
		RawResume(raw, back, "same session", nil),
		RSetWatches2(back,
			[]string{"/s/d", "/s/same", "/s/gone"},
			[]string{"/s/new", "/s/never"},
			[]string{"/s/kids", "/s/quiet", "/s/dead"},
			[]string{"/s/p"},
			[]string{"/s/r"}),
		RawEvents(back, 0),
		// What was not reported is armed again.
		Set(0, "/s/same", b("x2"), -1),
		Create(0, "/s/never", nil, 0),
		Create(0, "/s/quiet/q", nil, 0),
		Set(0, "/s/p", b("p3"), -1),
		Create(0, "/s/r/y", nil, 0),
		Set(0, "/s/d", b("d3"), -1), // reported at reconnect: no longer watched
		Create(0, "/s/kids/k2", nil, 0),
		RawEvents(back, 0),
		// The persistent watches keep firing.
		Set(0, "/s/p", b("p4"), -1),
		Set(0, "/s/r/y", b("y"), -1),
		RawEvents(back, 0),
		// setWatches2 with a relativeZxid of 0 on a fresh connection of the
		// same session: everything that exists changed since.
		RawDrop(back),
		RawResume(back, "r3", "same session again", nil),
		RawOn("r3", "setWatches2 relativeZxid=0", func(ctx context.Context, rc *RawConn) (Result, error) {
			req := &wire.SetWatches2{RelativeZxid: 0,
				DataWatches:  []string{AbsPath(ctx, "/s/same")},
				ExistWatches: []string{AbsPath(ctx, "/s/absent")},
				ChildWatches: []string{AbsPath(ctx, "/s/quiet")}}
			r, err := rc.CallXid(ctx, wire.XidSetWatches, wire.OpSetWatches2, req)
			if err != nil {
				return Result{}, err
			}
			return Result{Err: r.ErrName()}, nil
		}),
		RawEvents("r3", 0),
		// Edge cases: a node created and deleted while away (exist watch:
		// re-armed silently), a child deleted while away, a path in two lists.
		RawDrop("r3"),
		Create(0, "/s/flash", nil, 0),
		Delete(0, "/s/flash", -1),
		Delete(0, "/s/quiet/q", -1),
		RawResume("r3", "r4", "third time", nil),
		RSetWatches2("r4",
			[]string{"/s/same", "/s/same"},
			[]string{"/s/flash", "/s/same"},
			[]string{"/s/quiet", "/s/same"},
			[]string{"/s/same"},
			nil),
		RawEvents("r4", 0),
		Create(0, "/s/flash", nil, 0),
		Set(0, "/s/same", b("x3"), -1),
		Create(0, "/s/same/c", nil, 0),
		RawEvents("r4", 0),
		// A resume without setWatches: the new connection has no watches.
		RAddWatch("r4", "/s/kids", wire.AddWatchPersistent),
		RawDrop("r4"),
		RawResume("r4", "r3", "without setWatches", nil),
		Create(0, "/s/kids/k3", nil, 0),
		RawEvents("r3", 50*time.Millisecond),
		// Plain setWatches (101), as go-zookeeper sends it.
		RawOn("r3", "setWatches", func(ctx context.Context, rc *RawConn) (Result, error) {
			req := &wire.SetWatches{RelativeZxid: rc.LastZxid(),
				DataWatches:  []string{AbsPath(ctx, "/s/d")},
				ExistWatches: []string{AbsPath(ctx, "/s/d")},
				ChildWatches: []string{AbsPath(ctx, "/s/missing")}}
			r, err := rc.CallXid(ctx, wire.XidSetWatches, wire.OpSetWatches, req)
			if err != nil {
				return Result{}, err
			}
			return Result{Err: r.ErrName()}, nil
		}),
		RawEvents("r3", 0),
		Set(0, "/s/d", b("d4"), -1),
		RawEvents("r3", 0),
		RawCloseSession("r3"),
	}}
}

func rawHandshakeScript() Script {
	withReadOnly := NewSessionRequest(10*time.Second, true)
	withReadOnly.ReadOnly = true
	short := NewSessionRequest(time.Millisecond, false)
	long := NewSessionRequest(time.Hour, false)
	ahead := NewSessionRequest(10*time.Second, false)
	ahead.LastZxidSeen = 1 << 62
	version := NewSessionRequest(10*time.Second, false)
	version.ProtocolVersion = 7
	shortPasswd := NewSessionRequest(10*time.Second, false)
	shortPasswd.Passwd = []byte{1, 2, 3}
	return Script{Name: "raw-handshake", Steps: []Step{
		RawConnect("new session without the readOnly byte", NewSessionRequest(10*time.Second, false), ""),
		RawConnect("new session with readOnly=false", NewSessionRequest(10*time.Second, true), ""),
		RawConnect("new session with readOnly=true", withReadOnly, ""),
		RawConnect("new session asking a 1 ms timeout", short, ""),
		RawConnect("new session asking a 1 h timeout", long, ""),
		RawConnect("new session with protocolVersion 7", version, ""),
		RawConnect("new session with a 3-byte password", shortPasswd, ""),
		RawConnect("new session with lastZxidSeen far ahead", ahead, ""),
		RawOpen("ro", true),
		RCreate("ro", wire.OpCreate2, "/ro", nil, 1, 0), // a read-only-byte session writes normally
		RawCloseSession("ro"),
	}}
}

func rawReconnectScript() Script {
	const raw = "a"
	return Script{Name: "raw-reconnect", Steps: []Step{
		RawOpen(raw, false),
		RCreate(raw, wire.OpCreate2, "/h", b("h"), 1, 0),
		RExists(raw, "/h", true),
		// Refused: an unknown session (timeout 0, session 0, zero password, closed) ...
		RawResume(raw, "bad", "unknown session", func(r *wire.ConnectRequest) { r.SessionID ^= 0x5a5a5a5a }),
		RawResume(raw, "bad", "unknown session, readOnly byte", func(r *wire.ConnectRequest) {
			r.SessionID ^= 0x5a5a5a5a
			r.HasReadOnly = true
		}),
		// ... and lastZxidSeen far in the future: closed without a reply.
		RawResume(raw, "bad", "lastZxidSeen far ahead", func(r *wire.ConnectRequest) { r.LastZxidSeen = 1 << 62 }),
		// ... and lastZxidSeen just past the last zxid the session saw.
		RawResume(raw, "bad", "lastZxidSeen one ahead", func(r *wire.ConnectRequest) { r.LastZxidSeen++ }),
		// None of them disturbed the session's connection.
		RawEvents(raw, 0),
		RExists(raw, "/h", false),
		// A valid resume moves the session: the old connection is closed.
		RawResume(raw, "a2", "valid, with readOnly byte", func(r *wire.ConnectRequest) { r.HasReadOnly = true }),
		RExists("a2", "/h", false),
		Set(0, "/h", b("h2"), -1),
		RawEvents(raw, 0),
		RawEvents("a2", 0),
		// Resuming again from the first connection's view (a stale lastZxidSeen is fine).
		RawResume(raw, "a3", "valid again, older lastZxidSeen", nil),
		RawEvents("a2", 0),
		RExists("a3", "/h", true),
		Set(0, "/h", b("h3"), -1),
		RawEvents("a3", 0),
		// The session keeps its ephemerals and, after a close, is gone.
		Children2(0, "/", false),
		RawCloseSession("a3"),
		Children2(0, "/", false),
		RawResume("a3", "a4", "closed session", nil),
		// A wrong password for a session whose connection is gone: refused the
		// same way (ZooKeeper also closes the session's current connection
		// first; see KnownDifferenceScripts).
		RawOpen("w", true),
		RawDrop("w"),
		RawResume("w", "w2", "wrong password", func(r *wire.ConnectRequest) { r.Passwd[0] ^= 0xff }),
		RawResume("w", "w2", "wrong password, readOnly byte", func(r *wire.ConnectRequest) {
			r.Passwd[0] ^= 0xff
			r.HasReadOnly = true
		}),
		RawResume("w", "w2", "right password", nil),
		RawCloseSession("w2"),
	}}
}

func rawMiscOpsScript() Script {
	return Script{Name: "raw-misc-ops", Steps: []Step{
		RawOpen("r", false),
		RWhoAmI("r"),
		RAuth("r", "digest", userAlice),
		RWhoAmI("r"),
		RAuth("r", "digest", userAlice), // twice: listed once
		RAuth("r", "digest", userBob),
		RWhoAmI("r"),
		RAuth("r", "digest", "super:test"),
		RWhoAmI("r"),
		RAuth("r", "digest", "nocolon"),
		RawOpen("w", true),
		RAuth("w", "ip", "127.0.0.1"),
		RWhoAmI("w"),
		RawOpen("x", false),
		RAuth("x", "nosuchscheme", "whatever"),
		// reconfig without reconfigEnabled.
		RawOpen("rc", false),
		RRequestNoZxid("rc", "reconfig", wire.OpReconfig, func(context.Context) wire.Record {
			return &wire.ReconfigRequest{JoiningServers: "server.9=127.0.0.1:2888:3888;2181", CurConfigID: -1}
		}),
		RRequestNoZxid("rc", "reconfig (empty)", wire.OpReconfig, func(context.Context) wire.Record {
			return &wire.ReconfigRequest{CurConfigID: -1}
		}),
		Create(0, "/after-reconfig", nil, 0),
		// sasl without a SASL server configured.
		RawOpen("s", false),
		RRequest("s", "sasl", wire.OpSASL, func(context.Context) wire.Record {
			return &wire.GetSASLRequest{Token: []byte("token")}
		}),
		// Opcodes a client has no business sending.
		RawOpen("u", false),
		RRequest("u", "unknown opcode", 999, nil),
		RawOpen("u0", false),
		RRequest("u0", "notification", wire.OpNotification, nil),
		RawOpen("u1", false),
		RRequestNoZxid("u1", "createSession", wire.OpCreateSession, nil),
		RawOpen("u2", false),
		RRequest("u2", "error", wire.OpError, nil),
		RawOpen("p", false),
		RRequest("p", "ping with a normal xid", wire.OpPing, nil),
		RRequest("p", "getData without a body", wire.OpGetData, nil),
		RRequest("p", "whoAmI with a body", wire.OpWhoAmI, func(ctx context.Context) wire.Record {
			return &wire.GetDataRequest{Path: AbsPath(ctx, "/")}
		}),
		RRequest("p", "sync of the empty path", wire.OpSync, func(context.Context) wire.Record {
			return &wire.SyncRequest{Path: ""}
		}),
		RRequest("p", "sync of a relative path", wire.OpSync, func(context.Context) wire.Record {
			return &wire.SyncRequest{Path: "not/absolute"}
		}),
		// A watch asked for on a node that does not exist is not set (except by exists).
		RChildren("p", "/missing", true),
		RGet("p", "/missing", true),
		Create(0, "/missing", nil, 0),
		Create(0, "/missing/kid", nil, 0),
		RawEvents("p", 0),
		RawCloseSession("p"),
	}}
}

// rawDeleteContainerScript sends deleteContainer (20), the opcode of
// ZooKeeper's container reaper, from a client. Each attempt gets its own
// session, in case the server closes the connection.
func rawDeleteContainerScript() Script {
	del := func(name, path string) []Step {
		return []Step{
			RawOpen(name, false),
			// DeleteContainerRequest is one ustring, encoded like GetACLRequest.
			RRequestNoZxid(name, "deleteContainer "+path, wire.OpDeleteContainer, func(ctx context.Context) wire.Record {
				return &wire.GetACLRequest{Path: AbsPath(ctx, path)}
			}),
		}
	}
	steps := []Step{
		Create(0, "/k", nil, 4),
		Create(0, "/full", nil, 4),
		Create(0, "/full/x", nil, 0),
		CreateTTL(0, "/t", nil, 5, scriptTTL),
		Create(0, "/p", nil, 0),
		CreateACL(0, "/locked", nil, 4, DigestACL(PermAll, userAlice)),
		Children(0, "/", true),
	}
	for i, p := range []string{"/k", "/full", "/t", "/p", "/missing", "/locked"} {
		steps = append(steps, del(string(rune('a'+i)), p)...)
	}
	return Script{Name: "raw-deletecontainer", Steps: append(steps,
		Children2(0, "/", false),
		Events(0),
	)}
}

// KnownDifferenceScripts returns scripts that show the differences between
// Apache ZooKeeper 3.8.0 and Corral that are known and not (yet) removed;
// each fails against Corral at the step its comment names. They are not part
// of RawScripts (the differential suite must pass); tests/diff runs them
// when DIFFTEST_KNOWN=1, to check whether a difference is still there.
// ZooKeeper against itself they agree.
func KnownDifferenceScripts() []Script {
	return []Script{
		// A reconnect with the right session id and a wrong password: ZooKeeper
		// closes the session's current connection (NIOServerCnxnFactory.
		// closeSession(id, CLIENT_RECONNECT) runs before the password check),
		// then refuses. Corral refuses and leaves the connection alone: anyone
		// who knows a session id (every ephemeralOwner shows one) could
		// otherwise disconnect that session. Differs at step 2 ("closed" vs
		// open): the exists on the first connection.
		{Name: "known-wrong-password-reconnect-closes-connection", Steps: []Step{
			RawOpen("a", false),
			RawResume("a", "bad", "wrong password", func(r *wire.ConnectRequest) { r.Passwd[0] ^= 0xff }),
			RExists("a", "/", false),
			RawEvents("a", 0),
		}},
		// The empty path names the root in ZooKeeper's DataTree (it holds the
		// root under "" and "/") and reads do not validate paths, so getData,
		// exists, getChildren, getACL, getAllChildrenNumber and multiRead of ""
		// read the root (getAllChildrenNumber("") counts every node but "",
		// "/" included: one more than for "/"). Corral answers NONODE. Only
		// hand-made requests can carry "" (clients validate paths). Differs at
		// step 1 ("" vs NONODE).
		{Name: "known-empty-path-reads-root", Steps: []Step{
			RawOpen("r", false),
			emptyPathRead(wire.OpGetData, &wire.GetDataRequest{}),
			emptyPathRead(wire.OpExists, &wire.ExistsRequest{}),
			emptyPathRead(wire.OpGetChildren, &wire.GetChildrenRequest{}),
			emptyPathRead(wire.OpGetACL, &wire.GetACLRequest{}),
			emptyPathRead(wire.OpGetAllChildrenNumber, &wire.GetAllChildrenNumberRequest{}),
		}},
		// reconfig (disabled), deleteContainer and createSession from a client
		// become error txns in ZooKeeper's PrepRequestProcessor: each takes a
		// zxid, so the reply zxid is above what the client saw. Corral answers
		// with the same error codes without a zxid of its own. Differs at step 1
		// ("zxid>last seen" vs "zxid=last seen").
		{Name: "known-error-txns-take-a-zxid", Steps: []Step{
			RawOpen("r", false),
			RRequest("r", "reconfig", wire.OpReconfig, func(context.Context) wire.Record {
				return &wire.ReconfigRequest{CurConfigID: -1}
			}),
			RRequest("r", "deleteContainer", wire.OpDeleteContainer, func(ctx context.Context) wire.Record {
				return &wire.GetACLRequest{Path: AbsPath(ctx, "/")}
			}),
			RRequest("r", "createSession", wire.OpCreateSession, nil),
		}},
	}
}

// emptyPathRead sends a read of "" on raw session "r" and reports only its
// error code: what the root holds depends on every other run on the server.
func emptyPathRead(op wire.OpCode, req wire.Record) Step {
	return RawOn("r", fmt.Sprintf("%s \"\"", opLabel(op)), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, err := rc.Call(ctx, op, req)
		if err != nil {
			return Result{}, err
		}
		return Result{Err: r.ErrName()}, nil
	})
}

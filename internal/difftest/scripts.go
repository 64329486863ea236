package difftest

import (
	"crypto/sha1"
	"encoding/base64"
	"time"
)

// Credentials used by the scripts.
const (
	userAlice = "alice:secret"
	userBob   = "bob:hunter2"
)

// DigestID is the digest-scheme id of "user:password":
// user:base64(sha1("user:password")).
func DigestID(userPassword string) string {
	user := userPassword
	for i := 0; i < len(userPassword); i++ {
		if userPassword[i] == ':' {
			user = userPassword[:i]
			break
		}
	}
	h := sha1.Sum([]byte(userPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(h[:])
}

// DigestACL is the digest ACL entry for "user:password".
func DigestACL(perms int32, userPassword string) []ACL {
	return []ACL{{perms, "digest", DigestID(userPassword)}}
}

// ttl used by the scripts: long enough never to expire during a run.
const scriptTTL = time.Hour

// Scripts returns the fixed scripts: each covers one area of ZooKeeper's
// semantics deterministically. They expect the targets to have TTL nodes
// enabled (Apache ZooKeeper: -Dzookeeper.extendedTypesEnabled=true).
func Scripts() []Script {
	return []Script{
		crudScript(),
		createModesScript(),
		sequentialScript(),
		watchesScript(),
		ephemeralScript(),
		aclScript(),
		multiScript(),
		miscScript(),
	}
}

func b(s string) []byte { return []byte(s) }

func crudScript() Script {
	return Script{Name: "crud", Steps: []Step{
		Exists(0, "/", false),
		Create(0, "/d", b("hello"), 0),
		Get(0, "/d", false),
		Exists(0, "/d", false),
		Set(0, "/d", b("world"), 0),
		Set(0, "/d", b("stale"), 0), // BADVERSION
		Set(0, "/d", b("any"), -1),
		Get(0, "/d", false),
		Create(0, "/d", nil, 0),      // NODEEXISTS
		Create(0, "/x/y", nil, 0),    // NONODE (no parent)
		Create(0, "/d/null", nil, 0), // null data
		Create(0, "/d/empty", b(""), 0),
		Get(0, "/d/null", false),
		Get(0, "/d/empty", false),
		Set(0, "/d/null", b(""), -1), // null → empty
		Get(0, "/d/null", false),
		Set(0, "/d/empty", nil, -1), // empty → null
		Get(0, "/d/empty", false),
		Children(0, "/d", false),
		Children2(0, "/d", false),
		Get(0, "/d", false),     // parent mzxid/mtime unchanged by child creates
		Delete(0, "/d", -1),     // NOTEMPTY
		Delete(0, "/d/null", 5), // BADVERSION
		Delete(0, "/d/null", 2),
		Delete(0, "/d/null", -1),  // NONODE
		Children2(0, "/d", false), // cversion counts creates and deletes, pzxid moved
		Delete(0, "/d/empty", -1),
		Delete(0, "/d", 2),
		Exists(0, "/d", false),
		Get(0, "/d", false),            // NONODE
		Set(0, "/d", b("x"), -1),       // NONODE
		Children(0, "/d", false),       // NONODE
		Create(0, "/d", b("again"), 0), // re-created: fresh counters
		Children2(0, "/", false),
		Get(0, "/d", false),
		// Client-side path validation (go-zookeeper refuses before sending).
		Create(0, "d", nil, 0),
		Create(0, "/d/", nil, 0),
		Get(0, "/d//a", false),
		Exists(0, "/d/./a", false),
		// A 1000-byte value.
		Create(0, "/d/big", make([]byte, 1000), 0),
		Exists(0, "/d/big", false),
		// The other client sees the same tree.
		Get(1, "/d", false),
		Children2(1, "/d", false),
	}}
}

func createModesScript() Script {
	return Script{Name: "create-modes", Steps: []Step{
		Create(0, "/m", nil, 0),
		Create(0, "/m/persistent", b("p"), 0),
		Create(0, "/m/ephemeral", b("e"), 1),
		Create(0, "/m/seq-", b("s"), 2),
		Create(0, "/m/eseq-", b("es"), 3),
		Create(0, "/m/container", b("c"), 4),
		CreateTTL(0, "/m/ttl", b("t"), 5, scriptTTL),
		CreateTTL(0, "/m/ttlseq-", b("ts"), 6, scriptTTL),
		CreateTTL(0, "/m/ttl0", nil, 5, 0), // ttl must be > 0
		Create(0, "/m/bad", nil, 7),        // unknown mode: client refuses
		Children2(0, "/m", false),
		Get(0, "/m/ttl", false),
		Get(0, "/m/container", false),
		Exists(0, "/m/ephemeral", false),
		Exists(1, "/m/ephemeral", false), // owner visible to everyone
		// No children under ephemerals, whatever the child's mode.
		Create(0, "/m/ephemeral/child", nil, 0),
		Create(1, "/m/ephemeral/child", nil, 1),
		Create(0, "/m/ephemeral/seq-", nil, 2),
		Create(0, "/m/ephemeral", nil, 0), // NODEEXISTS wins over NOCHILDRENFOREPHEMERALS
		// Children of containers and TTL nodes.
		Create(0, "/m/container/a", nil, 0),
		CreateTTL(0, "/m/ttl/a", nil, 5, scriptTTL),
		Create(0, "/m/container/b", nil, 4),
		Children2(0, "/m/container", false),
		Delete(0, "/m/container/a", -1),
		Delete(0, "/m/container/b", -1),
		Exists(0, "/m/container", false), // still there: no reaper during the run
		Delete(0, "/m/ttl/a", -1),
		Delete(0, "/m/ttl", 0),
		Delete(0, "/m/ephemeral", -1),
		Children2(0, "/m", false),
		Set(0, "/m/container", b("c2"), 0),
		Get(0, "/m/container", false),
	}}
}

func sequentialScript() Script {
	return Script{Name: "sequential", Steps: []Step{
		Create(0, "/s", nil, 0),
		Create(0, "/s/q-", b("1"), 2), // q-0000000000
		Create(0, "/s/plain", nil, 0), // plain creates advance the counter too
		Create(0, "/s/q-", b("2"), 2), // q-0000000002
		Delete(0, "/s/plain", -1),     // deletes do not
		Create(1, "/s/q-", b("3"), 3), // ephemeral sequential
		Create(0, "/s/", nil, 2),      // trailing slash: name is only the counter
		Create(0, "/s/q-", nil, 0),    // "q-" as a plain name
		Create(0, "/s/q-", nil, 2),
		Children2(0, "/s", false),
		Exists(0, "/s/q-0000000000", false),
		Exists(0, "/s/q-0000000002", false),
		Delete(0, "/s/q-0000000000", -1),
		Create(0, "/s/q-", nil, 2),
		Children(0, "/s", false),
		Multi(0, Create(0, "/s/m-", nil, 2), Create(0, "/s/m-", nil, 2)),
		Children2(0, "/s", false),
		CloseSession(1),
		Children2(0, "/s", false),
		Create(0, "/s/q-", nil, 2),
		Children(0, "/s", false),
		// A deleted and re-created parent starts counting again.
		Create(0, "/s2", nil, 0),
		Create(0, "/s2/x-", nil, 2),
		Delete(0, "/s2/x-0000000000", -1),
		Delete(0, "/s2", -1),
		Create(0, "/s2", nil, 0),
		Create(0, "/s2/x-", nil, 2),
	}}
}

func watchesScript() Script {
	return Script{Name: "watches", Steps: []Step{
		Create(0, "/w", nil, 0),
		// exists watch on a missing node fires NodeCreated.
		Exists(1, "/w/a", true),
		Create(0, "/w/a", b("1"), 0),
		Events(1),
		// Data watch fires NodeDataChanged once (one-shot).
		Get(1, "/w/a", true),
		Set(0, "/w/a", b("2"), -1),
		Set(0, "/w/a", b("3"), -1),
		Events(1),
		// Child watch: NodeChildrenChanged on create and delete.
		Children(1, "/w", true),
		Create(0, "/w/b", nil, 0),
		Events(1),
		Children2(1, "/w", true),
		Delete(0, "/w/b", -1),
		Events(1),
		// Delete fires NodeDeleted to data watches, exists watches and
		// child watches; NodeChildrenChanged to the parent's child watch.
		Create(0, "/w/c", nil, 0),
		Get(1, "/w/c", true),
		Children(1, "/w/c", true),
		Exists(1, "/w/a", true),
		Children(1, "/w", true),
		Delete(0, "/w/c", -1),
		Delete(0, "/w/a", -1),
		Events(1),
		// A client sees its own change's event; the watch was set by the
		// same session that writes.
		Exists(0, "/w/self", true),
		Create(0, "/w/self", nil, 0),
		Events(0),
		// Watches on both clients, several kinds on one path.
		Exists(0, "/w/self", true),
		Get(1, "/w/self", true),
		Children(1, "/w/self", true),
		Create(1, "/w/self/kid", nil, 0),
		Set(1, "/w/self", b("x"), -1),
		Events(0),
		Events(1),
		// Failed operations and setACL fire nothing.
		Get(1, "/w/self", true),
		Set(0, "/w/self", b("y"), 99), // BADVERSION
		SetACL(0, "/w/self", WorldACL(PermAll), -1),
		Create(0, "/w/self", nil, 0), // NODEEXISTS
		Events(1),
		Set(0, "/w/self", b("z"), -1), // now the pending data watch fires
		Events(1),
		// getData/getChildren on a missing node set no watch.
		Get(1, "/w/missing", true),
		Children(1, "/w/missing", true),
		Create(0, "/w/missing", nil, 0),
		Events(1),
		// Multi fires events in op order.
		Exists(1, "/w/m1", true),
		Exists(1, "/w/m2", true),
		Children(1, "/w", true),
		Multi(0, Create(0, "/w/m2", nil, 0), Create(0, "/w/m1", nil, 0)),
		Events(1),
		// A failed multi fires nothing.
		Get(1, "/w/m1", true),
		Multi(0, Set(0, "/w/m1", b("q"), -1), Check("/w/m2", 7)),
		Events(1),
		// Leave watches armed: the end-of-script collection compares
		// what arrives for this last change.
		Get(0, "/w/m2", true),
		Set(1, "/w/m2", b("last"), -1),
	}}
}

func ephemeralScript() Script {
	return Script{Name: "ephemeral-session-close", Steps: []Step{
		Create(0, "/e", nil, 0),
		Create(1, "/e/x", b("x"), 1),
		Create(1, "/e/y", nil, 3),
		Create(1, "/e/p", nil, 0), // persistent: survives the session
		Create(1, "/e/p/z", nil, 1),
		Exists(0, "/e/x", true),
		Get(0, "/e/p/z", true),
		Children(0, "/e", true),
		Children(0, "/e/p", true),
		Children2(0, "/e", false),
		Exists(0, "/e/x", false), // ephemeralOwner = client 1's session
		CloseSession(1),          // deletes all of client 1's ephemerals in one txn
		Events(0),
		Children2(0, "/e", false),
		Children2(0, "/e/p", false),
		Exists(0, "/e/x", false),
		// Client 1 comes back with a new session.
		Create(1, "/e/x", nil, 1),
		Exists(0, "/e/x", true),
		Set(0, "/e/x", b("owned by 1"), -1), // other sessions may write it
		Delete(0, "/e/x", -1),               // and delete it
		Events(0),
		Create(1, "/e/x", nil, 1),
		Create(0, "/e/own", nil, 1),
		Exists(1, "/e/own", false),
		Children(0, "/e", true),
		CloseSession(1),
		CloseSession(0), // client 0's own ephemeral goes too
		Children2(1, "/e", false),
	}}
}

func aclScript() Script {
	alice := DigestACL(PermAll, userAlice)
	return Script{Name: "acl-auth", Steps: []Step{
		Create(0, "/a", nil, 0),
		GetACL(0, "/a"),
		CreateACL(0, "/a/ro", b("r"), 0, WorldACL(PermRead)),
		Set(0, "/a/ro", b("w"), -1),      // NOAUTH
		Create(0, "/a/ro/child", nil, 0), // NOAUTH (no CREATE)
		Get(1, "/a/ro", false),           // READ is allowed
		Delete(0, "/a/ro", -1),           // allowed: DELETE is checked on the parent
		CreateACL(0, "/a/priv", b("p"), 0, alice),
		GetACL(0, "/a/priv"),
		Get(0, "/a/priv", false),      // NOAUTH
		Set(1, "/a/priv", b("x"), -1), // NOAUTH
		AddAuth(0, userAlice),
		Get(0, "/a/priv", false),
		Set(0, "/a/priv", b("x"), -1),
		Get(1, "/a/priv", false), // client 1 still lacks it
		AddAuth(1, userBob),
		Get(1, "/a/priv", false), // wrong user
		// "auth" scheme expands to the caller's ids; INVALIDACL without.
		CreateACL(0, "/a/auth", nil, 0, AuthACL(PermAll)),
		GetACL(0, "/a/auth"),
		// Invalid ACLs.
		CreateACL(0, "/a/empty", nil, 0, EmptyACL()),
		CreateACL(0, "/a/badscheme", nil, 0, []ACL{{PermAll, "nosuchscheme", "x"}}),
		CreateACL(0, "/a/baddigest", nil, 0, []ACL{{PermAll, "digest", "nocolon"}}),
		CreateACL(0, "/a/ip", nil, 0, []ACL{{PermAll, "ip", "127.0.0.1"}}),
		CreateACL(0, "/a/badip", nil, 0, []ACL{{PermAll, "ip", "not-an-ip"}}),
		GetACL(0, "/a/ip"),
		CreateACL(0, "/a/multi", nil, 0, append(WorldACL(PermRead), DigestACL(PermAll, userBob)...)),
		GetACL(1, "/a/multi"),
		// Duplicate entries are removed.
		CreateACL(0, "/a/dup", nil, 0, append(WorldACL(PermAll), WorldACL(PermAll)...)),
		GetACL(0, "/a/dup"),
		// setACL: aversion bumps, BADVERSION, ADMIN needed.
		SetACL(0, "/a/priv", WorldACL(PermRead|PermAdmin), 0),
		SetACL(0, "/a/priv", WorldACL(PermAll), 0), // BADVERSION
		GetACL(1, "/a/priv"),
		Get(0, "/a/priv", false), // mzxid/version unchanged by setACL
		SetACL(1, "/a/priv", WorldACL(PermRead), 1),
		SetACL(1, "/a/priv", WorldACL(PermAll), -1), // NOAUTH now (no ADMIN)
		SetACL(0, "/a/missing", WorldACL(PermAll), -1),
		SetACL(0, "/a/priv", EmptyACL(), -1),
		// getACL without ADMIN masks digest ids? Read-only digest node.
		CreateACL(0, "/a/rd", nil, 0, append(WorldACL(PermRead), DigestACL(PermAll, userAlice)...)),
		GetACL(1, "/a/rd"),
		GetACL(0, "/a/rd"),
		// A NOAUTH node blocks creating children but a reader still lists.
		Children2(1, "/a", false),
		GetACL(0, "/a/missing"),
	}}
}

func multiScript() Script {
	return Script{Name: "multi", Steps: []Step{
		Create(0, "/t", nil, 0),
		Multi(0,
			Create(0, "/t/a", b("a"), 0),
			Create(0, "/t/a/b", b("b"), 0), // sees the previous op
			Set(0, "/t/a", b("a2"), 0),
			Check("/t/a", 1),
		),
		Get(0, "/t/a", false),
		Get(0, "/t/a/b", false),
		// Failing in the middle: earlier ops report OK (rolled back), the
		// failing op its code, later ops RUNTIMEINCONSISTENCY.
		Multi(0,
			Create(0, "/t/c", nil, 0),
			Set(0, "/t/a", b("x"), 7),
			Delete(0, "/t/a/b", -1),
		),
		Exists(0, "/t/c", false),
		Get(0, "/t/a", false),
		Multi(0, Delete(0, "/t/a", -1)),                         // NOTEMPTY
		Multi(0, Create(0, "/t/a", nil, 0)),                     // NODEEXISTS
		Multi(0, Check("/t/nope", -1)),                          // NONODE
		Multi(0, Delete(0, "/t/a/b", -1), Delete(0, "/t/a", 1)), // succeeds
		Children2(0, "/t", false),
		Multi(0, Create(0, "/t/e", nil, 1), Create(0, "/t/e/x", nil, 0)), // NOCHILDRENFOREPHEMERALS
		Multi(0, Create(0, "/t/s-", nil, 2), Create(0, "/t/es-", nil, 3), Create(0, "/t/e", nil, 1)),
		Children2(0, "/t", false),
		Exists(1, "/t/e", false),
		Multi(1), // empty multi
		// go-zookeeper does not validate paths inside multi, so these reach
		// the server (which answers NONODE, not BADARGUMENTS).
		Multi(0, Create(0, "/t/badpath/", nil, 0)),
		Multi(0, Create(0, "/t/x", nil, 0), Create(0, "t/y", nil, 0)),
		Multi(0, Create(0, "/t/acl", nil, 0), Set(0, "/t/acl", nil, -1)),
		// A container created through create (1) in a multi: ZooKeeper 3.8
		// creates it but answers with a result type go-zookeeper cannot
		// decode (APIERROR, no per-op results).
		Multi(0, Create(0, "/t/c4", nil, 4)),
		Multi(0, Create(0, "/t/c5", nil, 5)), // TTL mode through create (1): MARSHALLINGERROR
		Multi(0, Step{Op: OpCreate, Path: "/t/inv", ACL: EmptyACL()}),
		Multi(0, Check("/t/acl", 0), Delete(0, "/t/acl", 1)), // BADVERSION on the check
		Multi(0, Check("/t/acl", 1), Delete(0, "/t/acl", 1)),
		Children2(0, "/t", false),
		Multi(0, Delete(0, "/t/a", -1), Create(0, "/t/a", b("new"), 0), Set(0, "/t/a", b("newer"), 0)),
		Get(0, "/t/a", false),
		CloseSession(0),
		Children2(1, "/t", false),
	}}
}

func miscScript() Script {
	return Script{Name: "misc", Steps: []Step{
		Sync(0, "/"),
		Sync(0, "/nowhere"), // ZooKeeper does not check existence
		Create(0, "/p", nil, 0),
		Create(0, "/p/a", nil, 0),
		Create(0, "/p/b", nil, 0),
		Set(0, "/p/a", b("data"), -1),
		Children2(0, "/p", false), // pzxid = last child create, not the setData
		Delete(0, "/p/b", -1),
		Children2(0, "/p", false), // pzxid moved by the delete, mzxid not
		Exists(0, "/p", false),
		Set(0, "/p", b("parent"), 0),
		Children2(0, "/p", false),
		Sync(1, "/p"),
		Get(1, "/p", false),
		Children2(0, "/", false),
		Create(0, "/p/a/deep", nil, 0),
		Create(0, "/p/a/deep/deeper", nil, 0),
		Delete(0, "/p/a", -1),
		Children2(0, "/p/a/deep", false),
		AddAuth(0, userAlice),
		AddAuth(0, userAlice), // twice is fine
		AddAuth(0, userBob),
		CreateACL(0, "/p/auth2", nil, 0, AuthACL(PermAll)), // both ids
		GetACL(0, "/p/auth2"),
		Exists(0, "/p/auth2", false),
	}}
}

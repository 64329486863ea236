package difftest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxClients is the number of logical clients (sessions) a script may use.
const MaxClients = 2

// Op is the kind of a Step.
type Op int

// Step kinds. Each one maps to one go-zookeeper call unless noted.
const (
	// OpCreate creates Path with Data, ACL and Flags (0..6: persistent,
	// ephemeral, sequential, ephemeral-sequential, container, TTL,
	// sequential-TTL; TTL modes use TTL). go-zookeeper sends create (1),
	// createContainer (19) or createTTL (21). It has no create2, so with
	// Step.Stat the runner reads the new node's stat with exists right
	// after a successful create on the same session.
	OpCreate Op = iota + 1
	// OpDelete deletes Path if its version matches Version (-1: any).
	OpDelete
	// OpExists returns the stat or NONODE; Watch sets a watch (a data
	// watch if the node exists, else an exists watch).
	OpExists
	// OpGetData returns data and stat; Watch sets a data watch.
	OpGetData
	// OpSetData sets data if the version matches Version (-1: any).
	OpSetData
	// OpGetChildren returns the sorted child names. go-zookeeper sends
	// getChildren2 (12) for it; the stat is dropped. Watch sets a child
	// watch.
	OpGetChildren
	// OpGetChildren2 is OpGetChildren with the parent's stat.
	OpGetChildren2
	// OpGetACL returns the ACL list and stat.
	OpGetACL
	// OpSetACL sets the ACL if the aversion matches Version (-1: any).
	OpSetACL
	// OpCheck is a version check; valid only inside OpMulti.
	OpCheck
	// OpMulti runs Ops (OpCreate, OpDelete, OpSetData, OpCheck)
	// atomically and returns per-op results.
	OpMulti
	// OpSync syncs Path and returns the echoed path.
	OpSync
	// OpAddAuth adds digest credentials Auth ("user:password") to the
	// session.
	OpAddAuth
	// OpEvents returns the watch events the client received since the
	// last OpEvents. It first runs a barrier on the client (sync, then a
	// read): ZooKeeper delivers an event before any reply that reflects
	// the change, so every event caused by earlier steps has arrived when
	// the barrier's read returns. Wait > 0 then watches for Wait longer
	// for events that should not come.
	OpEvents
	// OpCloseSession collects the client's events (like OpEvents), then
	// closes its session: its ephemerals go away. The next step that uses
	// the client opens a new session.
	OpCloseSession
	// OpRaw calls Raw against the target's address: the extension point
	// for operations go-zookeeper cannot send (create2, addWatch,
	// multiRead, getEphemerals, whoAmI, setWatches2, ...). Name labels it
	// in reports.
	OpRaw
)

var opNames = map[Op]string{
	OpCreate: "create", OpDelete: "delete", OpExists: "exists", OpGetData: "getData",
	OpSetData: "setData", OpGetChildren: "getChildren", OpGetChildren2: "getChildren2",
	OpGetACL: "getACL", OpSetACL: "setACL", OpCheck: "check", OpMulti: "multi", OpSync: "sync",
	OpAddAuth: "addAuth", OpEvents: "events", OpCloseSession: "closeSession", OpRaw: "raw",
}

func (o Op) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// RawFunc performs one raw-wire step against addr (one "host:port" of the
// target) and returns its result with absolute server paths; the runner
// strips the run's chroot prefix from Result.Path, Multi paths and Events.
// Chroot(ctx) is the prefix to put in front of script paths. The function
// must open and close its own connection; a Result.Session it reports is
// paired across the two targets like the script's own sessions, and
// Result.Zxid (the reply header zxid) goes through the zxid bijection.
// A returned error aborts the run (use Result.Err for ZooKeeper errors).
type RawFunc func(ctx context.Context, addr string) (Result, error)

// Step is one operation of a Script. Paths are relative to the run's
// chroot-like prefix: "/" is the prefix itself, "/d/a" is <prefix>/d/a. A
// path that does not start with "/" is sent as it is (and rejected).
type Step struct {
	Op     Op
	Client int    // logical client, 0..MaxClients-1
	Path   string // target node
	// Data for create and setData. nil sends null data, []byte{} empty
	// data: ZooKeeper keeps the two apart.
	Data    []byte
	Flags   int32         // create mode 0..6
	TTL     time.Duration // for TTL create modes
	Version int32         // delete, setData, setACL, check; -1 matches any
	// ACL for create and setACL; nil means world:anyone:ALL. Use
	// EmptyACL() for an empty list (INVALIDACL).
	ACL   []ACL
	Watch bool   // exists, getData, getChildren(2)
	Stat  bool   // create: also return the new node's stat (create2-style)
	Ops   []Step // multi sub-operations
	Auth  string // addAuth digest credentials "user:password"
	// Wait is how long OpEvents (and OpCloseSession) keep listening after
	// the barrier; 0 for none.
	Wait time.Duration
	Name string  // label of a raw step
	Raw  RawFunc // raw step
}

// Script is a named sequence of steps.
type Script struct {
	Name string
	// Seed is the generator seed of a random script (0 for fixed
	// scripts); reports print it so that a failure can be replayed with
	// RandomScript(seed, steps).
	Seed  int64
	Steps []Step
}

// ACL is one access-control entry (ZooKeeper's ACL record).
type ACL struct {
	Perms  int32
	Scheme string
	ID     string
}

// Permission bits.
const (
	PermRead   int32 = 1
	PermWrite  int32 = 2
	PermCreate int32 = 4
	PermDelete int32 = 8
	PermAdmin  int32 = 16
	PermAll    int32 = 31
)

// WorldACL is world:anyone with perms.
func WorldACL(perms int32) []ACL { return []ACL{{perms, "world", "anyone"}} }

// EmptyACL is an empty, non-nil ACL list; ZooKeeper rejects it with
// INVALIDACL.
func EmptyACL() []ACL { return []ACL{} }

// AuthACL is the "auth" scheme: the creator's authenticated ids.
func AuthACL(perms int32) []ACL { return []ACL{{perms, "auth", ""}} }

// String renders the step for reports, e.g. `c1 setData /d/a "x" v=2`.
func (s Step) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "c%d %s", s.Client, s.Op)
	switch s.Op {
	case OpMulti:
		b.WriteString(" [")
		for i, o := range s.Ops {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(strings.TrimPrefix(o.String(), fmt.Sprintf("c%d ", o.Client)))
		}
		b.WriteString("]")
		return b.String()
	case OpAddAuth:
		fmt.Fprintf(&b, " digest %q", s.Auth)
		return b.String()
	case OpEvents, OpCloseSession:
		if s.Wait > 0 {
			fmt.Fprintf(&b, " wait=%v", s.Wait)
		}
		return b.String()
	case OpRaw:
		fmt.Fprintf(&b, " %s", s.Name)
		return b.String()
	}
	fmt.Fprintf(&b, " %q", s.Path)
	switch s.Op {
	case OpCreate:
		fmt.Fprintf(&b, " %s mode=%d", fmtData(s.Data), s.Flags)
		if s.Flags == 5 || s.Flags == 6 {
			fmt.Fprintf(&b, " ttl=%v", s.TTL)
		}
		if s.ACL != nil {
			fmt.Fprintf(&b, " acl=%s", fmtACL(s.ACL))
		}
	case OpSetData:
		fmt.Fprintf(&b, " %s v=%d", fmtData(s.Data), s.Version)
	case OpDelete, OpCheck:
		fmt.Fprintf(&b, " v=%d", s.Version)
	case OpSetACL:
		fmt.Fprintf(&b, " acl=%s v=%d", fmtACL(s.ACL), s.Version)
	}
	if s.Watch {
		b.WriteString(" watch")
	}
	return b.String()
}

func fmtData(d []byte) string {
	if d == nil {
		return "null"
	}
	if len(d) > 24 {
		return fmt.Sprintf("%q...(%d bytes)", d[:16], len(d))
	}
	return strconv.Quote(string(d))
}

func fmtACL(acl []ACL) string {
	if acl == nil {
		return "default"
	}
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = fmt.Sprintf("%s:%s:%d", a.Scheme, a.ID, a.Perms)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Step constructors, for readable scripts. c is the logical client.

// Create creates path with the given data and mode and world:anyone:ALL.
func Create(c int, path string, data []byte, flags int32) Step {
	return Step{Op: OpCreate, Client: c, Path: path, Data: data, Flags: flags, Stat: true}
}

// CreateACL creates path with an explicit ACL.
func CreateACL(c int, path string, data []byte, flags int32, acl []ACL) Step {
	return Step{Op: OpCreate, Client: c, Path: path, Data: data, Flags: flags, ACL: acl, Stat: true}
}

// CreateTTL creates a TTL node (flags 5 or 6).
func CreateTTL(c int, path string, data []byte, flags int32, ttl time.Duration) Step {
	return Step{Op: OpCreate, Client: c, Path: path, Data: data, Flags: flags, TTL: ttl, Stat: true}
}

// Delete deletes path at version v.
func Delete(c int, path string, v int32) Step {
	return Step{Op: OpDelete, Client: c, Path: path, Version: v}
}

// Exists stats path, optionally setting a watch.
func Exists(c int, path string, watch bool) Step {
	return Step{Op: OpExists, Client: c, Path: path, Watch: watch}
}

// Get reads path's data, optionally setting a watch.
func Get(c int, path string, watch bool) Step {
	return Step{Op: OpGetData, Client: c, Path: path, Watch: watch}
}

// Set writes path's data at version v.
func Set(c int, path string, data []byte, v int32) Step {
	return Step{Op: OpSetData, Client: c, Path: path, Data: data, Version: v}
}

// Children lists path's children, optionally setting a watch.
func Children(c int, path string, watch bool) Step {
	return Step{Op: OpGetChildren, Client: c, Path: path, Watch: watch}
}

// Children2 lists path's children with its stat.
func Children2(c int, path string, watch bool) Step {
	return Step{Op: OpGetChildren2, Client: c, Path: path, Watch: watch}
}

// GetACL reads path's ACL.
func GetACL(c int, path string) Step { return Step{Op: OpGetACL, Client: c, Path: path} }

// SetACL sets path's ACL at aversion v.
func SetACL(c int, path string, acl []ACL, v int32) Step {
	return Step{Op: OpSetACL, Client: c, Path: path, ACL: acl, Version: v}
}

// Check is a version check for Multi.
func Check(path string, v int32) Step { return Step{Op: OpCheck, Path: path, Version: v} }

// Multi runs ops atomically on client c.
func Multi(c int, ops ...Step) Step { return Step{Op: OpMulti, Client: c, Ops: ops} }

// Sync syncs path.
func Sync(c int, path string) Step { return Step{Op: OpSync, Client: c, Path: path} }

// AddAuth adds digest credentials "user:password".
func AddAuth(c int, userPassword string) Step {
	return Step{Op: OpAddAuth, Client: c, Auth: userPassword}
}

// Events collects client c's watch events.
func Events(c int) Step { return Step{Op: OpEvents, Client: c} }

// CloseSession closes client c's session.
func CloseSession(c int) Step { return Step{Op: OpCloseSession, Client: c} }

// Raw is a raw-wire step (see RawFunc).
func Raw(c int, name string, fn RawFunc) Step {
	return Step{Op: OpRaw, Client: c, Name: name, Raw: fn}
}

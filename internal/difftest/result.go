package difftest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Result is what one step observed on one target. Only the fields the
// step's operation produces are set.
type Result struct {
	// Err is "" on success, a ZooKeeper error name ("NONODE",
	// "BADVERSION", see CodeName) for a server error, or "client: ..." for
	// an error raised by the client library before anything was sent.
	Err string
	// Path is the created path (create) or the echoed path (sync),
	// relative to the run's prefix.
	Path string
	// Exists is set by exists (nil for other operations).
	Exists *bool
	// Data is getData's data; nil is null data, distinct from empty.
	Data []byte
	// Stat of exists, getData, setData, getChildren2, getACL, setACL, and
	// of create when Step.Stat is set.
	Stat *Stat
	// Children of getChildren(2), sorted.
	Children []string
	// ACL of getACL.
	ACL []ACL
	// Multi holds the per-op results of multi, in op order.
	Multi []Result
	// Events holds the watch events collected by OpEvents/OpCloseSession,
	// in arrival order.
	Events []Event
	// Zxid is the reply-header zxid where the client exposes it (raw
	// steps); 0 if not visible.
	Zxid int64
	// Session is a session id a raw step used (0 if none).
	Session int64
	// Values are free-form outputs of raw steps (e.g. whoAmI entries),
	// compared exactly and in order.
	Values []string
}

// Stat is ZooKeeper's Stat record.
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

// Event is a watch notification as a client sees it.
type Event struct {
	Type EventType
	Path string // relative to the run's prefix
}

func (e Event) String() string { return e.Type.String() + " " + e.Path }

// EventType is ZooKeeper's watcher event type.
type EventType int32

// Event types (Watcher.Event.EventType).
const (
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

func (t EventType) String() string {
	switch t {
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventDataWatchRemoved:
		return "DataWatchRemoved"
	case EventChildWatchRemoved:
		return "ChildWatchRemoved"
	case EventPersistentWatchRemoved:
		return "PersistentWatchRemoved"
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// codeNames are KeeperException.Code names (ZooKeeper 3.8).
var codeNames = map[int32]string{
	0: "OK", -1: "SYSTEMERROR", -2: "RUNTIMEINCONSISTENCY", -3: "DATAINCONSISTENCY",
	-4: "CONNECTIONLOSS", -5: "MARSHALLINGERROR", -6: "UNIMPLEMENTED", -7: "OPERATIONTIMEOUT",
	-8: "BADARGUMENTS", -12: "UNKNOWNSESSION", -13: "NEWCONFIGNOQUORUM", -14: "RECONFIGINPROGRESS",
	-100: "APIERROR", -101: "NONODE", -102: "NOAUTH", -103: "BADVERSION",
	-108: "NOCHILDRENFOREPHEMERALS", -110: "NODEEXISTS", -111: "NOTEMPTY", -112: "SESSIONEXPIRED",
	-113: "INVALIDCALLBACK", -114: "INVALIDACL", -115: "AUTHFAILED", -116: "CLOSING",
	-117: "NOTHING", -118: "SESSIONMOVED", -119: "NOTREADONLY", -120: "EPHEMERALONLOCALSESSION",
	-121: "NOWATCHER", -122: "REQUESTTIMEOUT", -123: "RECONFIGDISABLED",
	-124: "SESSIONCLOSEDREQUIRESASLAUTH", -125: "QUOTAEXCEEDED", -127: "THROTTLEDOP",
}

// CodeName names a ZooKeeper error code: 0 is "" (success), known codes
// their KeeperException.Code name, others "ERR(<code>)". Raw steps use it to
// fill Result.Err.
func CodeName(code int32) string {
	if code == 0 {
		return ""
	}
	if n, ok := codeNames[code]; ok {
		return n
	}
	return fmt.Sprintf("ERR(%d)", code)
}

// zkErrCodes maps go-zookeeper's error values back to codes.
var zkErrCodes = map[error]int32{
	zk.ErrAPIError: -100, zk.ErrNoNode: -101, zk.ErrNoAuth: -102, zk.ErrBadVersion: -103,
	zk.ErrNoChildrenForEphemerals: -108, zk.ErrNodeExists: -110, zk.ErrNotEmpty: -111,
	zk.ErrSessionExpired: -112, zk.ErrInvalidACL: -114, zk.ErrAuthFailed: -115,
	zk.ErrClosing: -116, zk.ErrNothing: -117, zk.ErrSessionMoved: -118,
	zk.ErrReconfigDisabled: -123, zk.ErrBadArguments: -8,
}

// ErrName canonicalises a go-zookeeper error for comparison: nil is "",
// server errors are named by code ("NONODE"; go-zookeeper reports codes it
// does not know as "unknown error: -6", which becomes "UNIMPLEMENTED"), and
// errors raised inside the client are "client: <text>".
func ErrName(err error) string {
	if err == nil {
		return ""
	}
	for e, code := range zkErrCodes {
		if errors.Is(err, e) {
			return CodeName(code)
		}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "unknown error: "); ok {
		if code, perr := strconv.ParseInt(rest, 10, 32); perr == nil {
			return CodeName(int32(code))
		}
	}
	switch {
	case errors.Is(err, zk.ErrInvalidPath):
		return "client: invalid path"
	case errors.Is(err, zk.ErrInvalidFlags):
		return "client: invalid flags"
	case errors.Is(err, zk.ErrConnectionClosed):
		return "client: connection closed"
	}
	return "client: " + msg
}

func statFromZK(s *zk.Stat) *Stat {
	if s == nil {
		return nil
	}
	return &Stat{
		Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime,
		Version: s.Version, Cversion: s.Cversion, Aversion: s.Aversion,
		EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength,
		NumChildren: s.NumChildren, Pzxid: s.Pzxid,
	}
}

func aclToZK(acl []ACL) []zk.ACL {
	if acl == nil {
		return zk.WorldACL(zk.PermAll)
	}
	out := make([]zk.ACL, len(acl))
	for i, a := range acl {
		out[i] = zk.ACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID}
	}
	return out
}

func aclFromZK(acl []zk.ACL) []ACL {
	if acl == nil {
		return nil
	}
	out := make([]ACL, len(acl))
	for i, a := range acl {
		out[i] = ACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID}
	}
	return out
}

// String renders a result compactly for reports; zxids in hex.
func (r Result) String() string {
	var parts []string
	if r.Err != "" {
		parts = append(parts, "err="+r.Err)
	}
	if r.Path != "" {
		parts = append(parts, "path="+strconv.Quote(r.Path))
	}
	if r.Exists != nil {
		parts = append(parts, "exists="+strconv.FormatBool(*r.Exists))
	}
	if r.Data != nil {
		parts = append(parts, "data="+fmtData(r.Data))
	}
	if r.Stat != nil {
		parts = append(parts, "stat="+r.Stat.String())
	}
	if r.Children != nil {
		parts = append(parts, fmt.Sprintf("children=%q", r.Children))
	}
	if r.ACL != nil {
		parts = append(parts, "acl="+fmtACL(r.ACL))
	}
	if r.Multi != nil {
		sub := make([]string, len(r.Multi))
		for i, m := range r.Multi {
			sub[i] = "{" + m.String() + "}"
		}
		parts = append(parts, "multi=["+strings.Join(sub, " ")+"]")
	}
	if r.Events != nil {
		ev := make([]string, len(r.Events))
		for i, e := range r.Events {
			ev[i] = e.String()
		}
		parts = append(parts, "events=["+strings.Join(ev, ", ")+"]")
	}
	if r.Zxid != 0 {
		parts = append(parts, fmt.Sprintf("zxid=%#x", r.Zxid))
	}
	if r.Session != 0 {
		parts = append(parts, fmt.Sprintf("session=%#x", r.Session))
	}
	if r.Values != nil {
		parts = append(parts, fmt.Sprintf("values=%q", r.Values))
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, " ")
}

func (s *Stat) String() string {
	return fmt.Sprintf("{czxid=%#x mzxid=%#x pzxid=%#x ctime=%d mtime=%d v=%d cv=%d av=%d owner=%#x len=%d kids=%d}",
		s.Czxid, s.Mzxid, s.Pzxid, s.Ctime, s.Mtime, s.Version, s.Cversion, s.Aversion,
		s.EphemeralOwner, s.DataLength, s.NumChildren)
}

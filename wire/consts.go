package wire

// OpCode is a request type (ZooDefs.OpCode in ZooKeeper 3.8).
type OpCode int32

// Request opcodes.
const (
	OpNotification         OpCode = 0
	OpCreate               OpCode = 1
	OpDelete               OpCode = 2
	OpExists               OpCode = 3
	OpGetData              OpCode = 4
	OpSetData              OpCode = 5
	OpGetACL               OpCode = 6
	OpSetACL               OpCode = 7
	OpGetChildren          OpCode = 8
	OpSync                 OpCode = 9
	OpPing                 OpCode = 11
	OpGetChildren2         OpCode = 12
	OpCheck                OpCode = 13
	OpMulti                OpCode = 14
	OpCreate2              OpCode = 15
	OpReconfig             OpCode = 16
	OpCheckWatches         OpCode = 17
	OpRemoveWatches        OpCode = 18
	OpCreateContainer      OpCode = 19
	OpDeleteContainer      OpCode = 20
	OpCreateTTL            OpCode = 21
	OpMultiRead            OpCode = 22
	OpAuth                 OpCode = 100
	OpSetWatches           OpCode = 101
	OpSASL                 OpCode = 102
	OpGetEphemerals        OpCode = 103
	OpGetAllChildrenNumber OpCode = 104
	OpSetWatches2          OpCode = 105
	OpAddWatch             OpCode = 106
	OpWhoAmI               OpCode = 107
	OpCreateSession        OpCode = -10
	OpCloseSession         OpCode = -11
	OpError                OpCode = -1
)

// Special xids.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)

// Err is a ZooKeeper error code (KeeperException.Code).
type Err int32

// Error codes.
const (
	ErrOK                       Err = 0
	ErrSystemError              Err = -1
	ErrRuntimeInconsistency     Err = -2
	ErrDataInconsistency        Err = -3
	ErrConnectionLoss           Err = -4
	ErrMarshallingError         Err = -5
	ErrUnimplemented            Err = -6
	ErrOperationTimeout         Err = -7
	ErrBadArguments             Err = -8
	ErrUnknownSession           Err = -12
	ErrNewConfigNoQuorum        Err = -13
	ErrReconfigInProgress       Err = -14
	ErrAPIError                 Err = -100
	ErrNoNode                   Err = -101
	ErrNoAuth                   Err = -102
	ErrBadVersion               Err = -103
	ErrNoChildrenForEphemerals  Err = -108
	ErrNodeExists               Err = -110
	ErrNotEmpty                 Err = -111
	ErrSessionExpired           Err = -112
	ErrInvalidCallback          Err = -113
	ErrInvalidACL               Err = -114
	ErrAuthFailed               Err = -115
	ErrSessionMoved             Err = -118
	ErrNotReadOnly              Err = -119
	ErrEphemeralOnLocalSession  Err = -120
	ErrNoWatcher                Err = -121
	ErrRequestTimeout           Err = -122
	ErrReconfigDisabled         Err = -123
	ErrSessionClosedRequireSASL Err = -124
	ErrQuotaExceeded            Err = -125
	ErrThrottledOp              Err = -127
)

var errNames = map[Err]string{
	ErrOK: "OK", ErrSystemError: "SYSTEMERROR", ErrRuntimeInconsistency: "RUNTIMEINCONSISTENCY",
	ErrDataInconsistency: "DATAINCONSISTENCY", ErrConnectionLoss: "CONNECTIONLOSS",
	ErrMarshallingError: "MARSHALLINGERROR", ErrUnimplemented: "UNIMPLEMENTED",
	ErrOperationTimeout: "OPERATIONTIMEOUT", ErrBadArguments: "BADARGUMENTS",
	ErrUnknownSession: "UNKNOWNSESSION", ErrNewConfigNoQuorum: "NEWCONFIGNOQUORUM",
	ErrReconfigInProgress: "RECONFIGINPROGRESS", ErrAPIError: "APIERROR", ErrNoNode: "NONODE",
	ErrNoAuth: "NOAUTH", ErrBadVersion: "BADVERSION", ErrNoChildrenForEphemerals: "NOCHILDRENFOREPHEMERALS",
	ErrNodeExists: "NODEEXISTS", ErrNotEmpty: "NOTEMPTY", ErrSessionExpired: "SESSIONEXPIRED",
	ErrInvalidCallback: "INVALIDCALLBACK", ErrInvalidACL: "INVALIDACL", ErrAuthFailed: "AUTHFAILED",
	ErrSessionMoved: "SESSIONMOVED", ErrNotReadOnly: "NOTREADONLY",
	ErrEphemeralOnLocalSession: "EPHEMERALONLOCALSESSION", ErrNoWatcher: "NOWATCHER",
	ErrRequestTimeout: "REQUESTTIMEOUT", ErrReconfigDisabled: "RECONFIGDISABLED",
	ErrSessionClosedRequireSASL: "SESSIONCLOSEDREQUIRESASLAUTH", ErrQuotaExceeded: "QUOTAEXCEEDED",
	ErrThrottledOp: "THROTTLEDOP",
}

// String returns ZooKeeper's name for the code.
func (e Err) String() string {
	if s, ok := errNames[e]; ok {
		return s
	}
	return "UNKNOWN(" + itoa(int64(e)) + ")"
}

// Error makes Err usable as a Go error.
func (e Err) Error() string { return "zookeeper: " + e.String() }

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	neg := v < 0
	if neg {
		v = -v
	}
	var b [24]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// EventType is a watch event type (Watcher.Event.EventType).
type EventType int32

// Event types.
const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

// KeeperState values sent in notifications.
const (
	StateDisconnected  int32 = 0
	StateSyncConnected int32 = 3
	StateAuthFailed    int32 = 4
	StateExpired       int32 = -112
	StateClosed        int32 = 7
)

// WatcherType for checkWatches/removeWatches.
const (
	WatcherChildren int32 = 1
	WatcherData     int32 = 2
	WatcherAny      int32 = 3
)

// AddWatch modes.
const (
	AddWatchPersistent          int32 = 0
	AddWatchPersistentRecursive int32 = 1
)

// Permission bits.
const (
	PermRead   int32 = 1
	PermWrite  int32 = 2
	PermCreate int32 = 4
	PermDelete int32 = 8
	PermAdmin  int32 = 16
	PermAll    int32 = 31
)

// Create mode flags (CreateMode.fromFlag).
const (
	FlagPersistent                  int32 = 0
	FlagEphemeral                   int32 = 1
	FlagPersistentSequential        int32 = 2
	FlagEphemeralSequential         int32 = 3
	FlagContainer                   int32 = 4
	FlagPersistentWithTTL           int32 = 5
	FlagPersistentSequentialWithTTL int32 = 6
)

// Limits.
const (
	// DefaultMaxBuffer is jute.maxbuffer's default (1 MiB - 1).
	DefaultMaxBuffer = 0xfffff
	// MaxTTL is the largest TTL in milliseconds (EphemeralType.MAX_TTL).
	MaxTTL = 0x000000FFFFFFFFFF
	// PasswordLen is the length of a session password.
	PasswordLen = 16
)

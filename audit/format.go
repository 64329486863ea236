package audit

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/corral/corral/wire"
)

// Result is an event's outcome (AuditEvent.Result).
type Result int

const (
	Success Result = iota
	Failure
	Invoked
)

func (r Result) String() string {
	switch r {
	case Failure:
		return "failure"
	case Invoked:
		return "invoked"
	}
	return "success"
}

// Operation names (AuditConstants).
const (
	OpServerStart = "serverStart"
	OpServerStop  = "serverStop"
	OpCreate      = "create"
	OpDelete      = "delete"
	OpSetData     = "setData"
	OpSetACL      = "setAcl"
	OpMulti       = "multiOperation"
	OpReconfig    = "reconfig"
	// OpEphemeralDeleted is AuditConstants.OP_DEL_EZNODE_EXP: an ephemeral znode removed
	// because its session closed or expired.
	OpEphemeralDeleted = "ephemeralZNodeDeletionOnSessionCloseOrExpire"
)

// Event is one audit line's fields. An empty field is left out of the line, as ZooKeeper leaves
// out null ones. Session is set (HasSession) for client operations only.
type Event struct {
	Session    int64
	HasSession bool
	User       string
	IP         string
	Operation  string
	Znode      string
	ZnodeType  string
	ACL        string
	Result     Result
}

// Message is the event as ZooKeeper's AuditEvent.toString writes it: key=value pairs in
// ZKAuditProvider's order, tab-separated, result last.
func (e Event) Message() string {
	var b strings.Builder
	add := func(k, v string) {
		if v == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	if e.HasSession {
		add("session", SessionHex(e.Session))
	}
	add("user", e.User)
	add("ip", e.IP)
	add("operation", e.Operation)
	add("znode", e.Znode)
	add("znode_type", e.ZnodeType)
	add("acl", e.ACL)
	if b.Len() > 0 {
		b.WriteByte('\t')
	}
	b.WriteString("result=")
	b.WriteString(e.Result.String())
	return b.String()
}

// Line is the event as the audit appender of ZooKeeper's shipped logging configuration writes it
// ("%d{ISO8601} %p %c{2}: %m%n"), with t in local time; it ends with a newline.
func (e Event) Line(t time.Time) string {
	level := "INFO"
	if e.Result == Failure {
		level = "ERROR"
	}
	return t.Format("2006-01-02 15:04:05,000") + " " + level + " audit.Slf4jAuditLogger: " + e.Message() + "\n"
}

// SessionHex is ServerCnxn.getSessionIdHex: "0x" and Long.toHexString (two's complement).
func SessionHex(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

// HostAddress writes an IP address as Java's InetAddress.getHostAddress does, which ZooKeeper uses
// for the ip field and the ip identity: IPv4 (and IPv4-mapped IPv6) dotted, IPv6 as eight
// groups of lowercase hex without leading zeros and without "::" compression, a zone kept after
// "%". Anything else is returned as it is.
func HostAddress(s string) string {
	host, zone, _ := strings.Cut(s, "%")
	ip := net.ParseIP(host)
	if ip == nil {
		return s
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	var b strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.FormatUint(uint64(ip[i])<<8|uint64(ip[i+1]), 16))
	}
	if zone != "" {
		b.WriteString("%" + zone)
	}
	return b.String()
}

// Users is AuthUtil.getUsers over a connection's identities, given in the order ZooKeeper keeps
// them: each identity's user name by its provider (digest: the part before the first colon; ip,
// sasl, x509: the id itself), identities without a provider ("super") and blank names left
// out, joined with commas. An ip identity is written as HostAddress writes it.
func Users(ids []wire.ID) string {
	var names []string
	for _, id := range ids {
		var n string
		switch id.Scheme {
		case "digest":
			n, _, _ = strings.Cut(id.ID, ":")
		case "ip":
			n = HostAddress(id.ID)
		case "sasl", "x509":
			n = id.ID
		default:
			continue
		}
		if strings.TrimSpace(n) != "" {
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}

// ACLString is ZKUtil.aclToString: "scheme:id:perms" per entry, the entries not separated.
func ACLString(acl []wire.ACL) string {
	var b strings.Builder
	for _, a := range acl {
		b.WriteString(a.ID.Scheme)
		b.WriteByte(':')
		b.WriteString(a.ID.ID)
		b.WriteByte(':')
		b.WriteString(PermString(a.Perms))
	}
	return b.String()
}

// PermString is ZKUtil.getPermString: the letters c, d, r, w, a in that order.
func PermString(p int32) string {
	var b []byte
	for _, x := range []struct {
		bit int32
		c   byte
	}{{wire.PermCreate, 'c'}, {wire.PermDelete, 'd'}, {wire.PermRead, 'r'}, {wire.PermWrite, 'w'}, {wire.PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b = append(b, x.c)
		}
	}
	return string(b)
}

// CreateMode is CreateMode.fromFlag(flags).toString().toLowerCase(), "" for a flag value
// CreateMode does not know (ZooKeeper then fails to audit the request and writes no line).
func CreateMode(flags int32) string {
	switch flags {
	case wire.FlagPersistent:
		return "persistent"
	case wire.FlagEphemeral:
		return "ephemeral"
	case wire.FlagPersistentSequential:
		return "persistent_sequential"
	case wire.FlagEphemeralSequential:
		return "ephemeral_sequential"
	case wire.FlagContainer:
		return "container"
	case wire.FlagPersistentWithTTL:
		return "persistent_with_ttl"
	case wire.FlagPersistentSequentialWithTTL:
		return "persistent_sequential_with_ttl"
	}
	return ""
}

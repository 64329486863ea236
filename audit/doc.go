// Package audit writes ZooKeeper 3.6+'s audit log: one line per audited operation, in the format
// of ZooKeeper's Slf4jAuditLogger behind the appender of ZooKeeper's shipped logging configuration
// (conf/logback.xml and log4j.properties: "%d{ISO8601} %p %c{2}: %m%n").
//
// What it owns:
//
//   - The format (format.go): an Event is the key=value fields ZooKeeper's ZKAuditProvider
//     collects, in its order (session, user, ip, operation, znode, znode_type, acl) and then
//     result, separated by tabs, fields without a value left out. Users turns a connection's
//     identities into the user field (AuthUtil.getUsers: each provider's user name, joined with
//     commas); ACLString is ZKUtil.aclToString (entries run together without a separator);
//     CreateMode is CreateMode.toString().toLowerCase(); HostAddress writes addresses as Java
//     does (IPv6 without "::" compression). Line prefixes the message with the
//     timestamp (local time, "2006-01-02 15:04:05,000"), the level (ERROR for result=failure,
//     INFO otherwise, as Slf4jAuditLogger logs them) and "audit.Slf4jAuditLogger: ".
//   - Which operations are audited, and how (ops.go): Write and Multi map a write's request and
//     outcome to the events AuditHelper.addAuditLog produces: create (not createTTL), delete,
//     setData and setAcl, with result=failure and the request's path when the write failed;
//     reconfig (always refused) is a failure line without znode;
//     a successful multi is one line per create, delete and setData in it (no line for check),
//     a failed multi one multiOperation line with result=failure and no znode;
//     EphemeralDeleted is DataTree.deleteNodes' line for an ephemeral znode removed when its
//     session closed or expired (the server's own user, no ip).
//   - The file (log.go): Log appends lines to one file through a buffered writer. A writer
//     goroutine, owned by the Log and stopped and waited for by Close, flushes as soon as no
//     line is waiting, so that a line reaches the file within one write system call of the
//     reply it belongs to while bursts of lines share writes. Open writes the serverStart line,
//     Close the serverStop line (result=invoked), like ZooKeeper's start-up and shutdown hook.
//
// Invariants: a Log is safe for concurrent use; Write never blocks on the disk (lines queue in
// memory while the writer goroutine writes; a write error is logged once and later lines are
// dropped, an audit log does not stop the server). No rotation: the file is opened with
// O_APPEND and only grows; logrotate's copytruncate rotates it.
//
// Callers: package server calls Write/Multi when a write's reply is complete, on the server the
// client is connected to (as ZooKeeper's FinalRequestProcessor does only for requests with a
// connection); package cluster opens the Log (audit.enable), closes it at stop, and writes
// EphemeralDeleted lines from every data shard replica's apply listener (on every server, as
// ZooKeeper's DataTree does).
package audit

package shard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/corral/corral/wire"
)

// Quotas (ZooKeeper's /zookeeper/quota; docs/design.md "Quotas").
//
// A path P has a quota when the node /zookeeper/quota/P/zookeeper_limits exists; its
// zookeeper_stats sibling holds P's usage as ZooKeeper's StatsTrack text, "count=N,bytes=M":
// N counts P itself and every node below it, M the bytes of their data. The router places
// /zookeeper/quota/P/... on the shard that serves P, so limits, stats and the nodes they count
// are in one shard's state and change in one apply.
//
// What apply does, as ZooKeeper's DataTree and PrepRequestProcessor do, when the batch (or the
// cross-shard prepare) says so (QuotaMode):
//   - every create, delete and setData of a node X adds its change of count and bytes to the
//     stats of the longest quota'd prefix of X (never "/"); the stats node's data is replaced
//     in place: no version, mzxid or watch event changes (DataTree.updateQuotaStat);
//   - creating a zookeeper_stats node below /zookeeper/quota sets its data to the usage of its
//     path counted afresh (DataTree.updateQuotaForPath); the reply to the create still shows
//     the data the client sent;
//   - with QuotaEnforce, a create (count +1, bytes of its data) or setData (bytes new − old)
//     that would take the usage past a limit of the longest quota'd prefix logs "Quota
//     exceeded" and, for a hard limit (countHardLimit, byteHardLimit), fails with QUOTAEXCEEDED
//     (ZooKeeperServer.checkQuota: after every other check of a create, before BADVERSION of a
//     setData). A soft limit (count, bytes) only logs. Without enforcement nothing is logged.
//
// Stubs are no nodes of the shard and count nowhere; a subtree mounted on another shard below
// a quota'd path is not counted (docs/compatibility.md).

// QuotaMode says how a batch's writes treat quotas.
type QuotaMode uint8

const (
	// QuotaOff: no accounting (batches written below format.LevelQuota).
	QuotaOff QuotaMode = iota
	// QuotaCount: zookeeper_stats nodes follow every change; limits are not checked.
	QuotaCount
	// QuotaEnforce: QuotaCount, and writes past a hard limit fail with QUOTAEXCEEDED
	// (zookeeper.enforceQuota=true on the proposing server).
	QuotaEnforce
)

func (q QuotaMode) batchFlags() byte {
	switch q {
	case QuotaCount:
		return batchFlagQuotaCount
	case QuotaEnforce:
		return batchFlagQuotaCount | batchFlagQuotaEnforce
	}
	return 0
}

func quotaFromFlags(flags byte) (QuotaMode, bool) {
	switch flags & (batchFlagQuotaCount | batchFlagQuotaEnforce) {
	case 0:
		return QuotaOff, true
	case batchFlagQuotaCount:
		return QuotaCount, true
	case batchFlagQuotaCount | batchFlagQuotaEnforce:
		return QuotaEnforce, true
	}
	return QuotaOff, false // enforce without count
}

// The quota namespace (ZooKeeper's Quotas class).
const (
	QuotaRoot      = "/zookeeper/quota"
	QuotaLimitNode = "zookeeper_limits"
	QuotaStatNode  = "zookeeper_stats"
)

// quotaRootKey is the key of /zookeeper/quota, quotaKeyPrefix the key prefix of every node
// strictly below it.
const (
	quotaRootKey   = "\x01zookeeper\x01quota"
	quotaKeyPrefix = quotaRootKey + "\x01"
)

// quotaNodeKey returns the key of /zookeeper/quota<prefix>/<name> for an absolute prefix other
// than "/" (keyOf of that path: false when prefix holds keySep).
func quotaNodeKey(prefix, name string) (string, bool) {
	if strings.IndexByte(prefix, keySep) >= 0 {
		return "", false
	}
	return quotaKeyOf(strings.ReplaceAll(prefix, "/", string(rune(keySep))), name), true
}

// quotaKeyOf returns the key of /zookeeper/quota<prefix>/<name> from prefix's key (its '/'
// replaced by keySep), with one allocation.
func quotaKeyOf(prefixKey, name string) string {
	return quotaRootKey + prefixKey + string(rune(keySep)) + name
}

// quotaPrefixes calls f with every prefix of path at a component boundary, longest first,
// "/" excluded ("/a/b" gives "/a/b", then "/a"). It stops when f returns false.
func quotaPrefixes(path string, f func(prefix string) bool) {
	if len(path) < 2 || path[0] != '/' {
		return
	}
	for p := path; len(p) > 1; {
		if !f(p) {
			return
		}
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			return
		}
		p = p[:i]
	}
}

// quotaTrack is a parsed StatsTrack: its name=value pairs.
type quotaTrack map[string]int64

// parseQuotaTrack parses StatsTrack text as ZooKeeper 3.8 does: pairs separated by runs of ','
// and ';', each split at '=' (an empty value is -1); ok is false where ZooKeeper's parser
// throws (a pair without a value, a value that is not a decimal long).
func parseQuotaTrack(data []byte) (quotaTrack, bool) {
	t := quotaTrack{}
	s := string(data)
	if s == "" {
		return t, true
	}
	pairs := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' })
	if s[0] == ',' || s[0] == ';' {
		pairs = append([]string{""}, pairs...) // Pattern.split keeps a leading empty string
	}
	for _, pair := range pairs {
		kv := strings.Split(pair, "=")
		for len(kv) > 1 && kv[len(kv)-1] == "" {
			kv = kv[:len(kv)-1] // String.split drops trailing empty strings
		}
		if len(kv) < 2 {
			return nil, false
		}
		v := kv[1]
		if v == "" {
			v = "-1"
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, false
		}
		t[kv[0]] = n
	}
	return t, true
}

// get is StatsTrack.getValue: -1 for a missing name.
func (t quotaTrack) get(name string) int64 {
	if v, ok := t[name]; ok {
		return v
	}
	return -1
}

// bytes is StatsTrack.toString: "count=N,bytes=M", then, if there are other names, "=" and
// ";name=value" for each in sorted order.
func (t quotaTrack) bytes() []byte {
	b := fmt.Appendf(nil, "count=%d,bytes=%d", t.get("count"), t.get("bytes"))
	var rest []string
	for k := range t {
		if k != "count" && k != "bytes" {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		slices.Sort(rest)
		b = append(b, '=')
		for _, k := range rest {
			b = fmt.Appendf(b, ";%s=%d", k, t[k])
		}
	}
	return b
}

// QuotaUsage is what a quota's stats node says, as a reader parses it.
type QuotaUsage struct{ Count, Bytes int64 }

// ParseQuotaUsage parses a zookeeper_stats (or zookeeper_limits) node's data: its count and
// bytes (-1 when absent).
func ParseQuotaUsage(data []byte) (QuotaUsage, bool) {
	t, ok := parseQuotaTrack(data)
	if !ok {
		return QuotaUsage{}, false
	}
	return QuotaUsage{Count: t.get("count"), Bytes: t.get("bytes")}, true
}

// quotaPivot is where the quota nodes start in key order (never changed: shared by all trees).
var quotaPivot = &node{key: quotaKeyPrefix}

// anyQuotaNode reports whether the shard holds any node below /zookeeper/quota (in the
// overlay): a cheap test before the per-prefix lookups.
func (t *txn) anyQuotaNode() bool {
	found := false
	t.s.tree.nodes.AscendGreaterOrEqual(quotaPivot, func(n *node) bool {
		found = strings.HasPrefix(n.key, quotaKeyPrefix)
		return false
	})
	if found {
		return true
	}
	for k, n := range t.changes {
		if n != nil && strings.HasPrefix(k, quotaKeyPrefix) {
			return true
		}
	}
	return false
}

// quotaPrefix is DataTree.getMaxPrefixWithQuota: the longest prefix of path with a
// zookeeper_limits node (never "/").
func (t *txn) quotaPrefix(path string) (string, bool) {
	if !t.anyQuotaNode() {
		return "", false
	}
	var found string
	quotaPrefixes(path, func(p string) bool {
		if k, ok := quotaNodeKey(p, QuotaLimitNode); ok && t.visible(k) != nil {
			found = p
			return false
		}
		return true
	})
	return found, found != ""
}

// quotaCount adds (dCount, dBytes) to the stats of the longest quota'd prefix of path
// (DataTree.updateQuotaStat). A missing or unreadable stats node is left alone with a log line.
func (t *txn) quotaCount(path string, dCount, dBytes int64) {
	if t.quota == QuotaOff {
		return
	}
	prefix, ok := t.quotaPrefix(path)
	if !ok {
		return
	}
	key, _ := quotaNodeKey(prefix, QuotaStatNode)
	n := t.visible(key)
	if n == nil {
		t.s.quotaLog("Missing quota stat node " + QuotaRoot + prefix + "/" + QuotaStatNode)
		return
	}
	st, ok := parseQuotaTrack(n.data)
	if !ok {
		t.s.quotaLog(fmt.Sprintf("Unreadable quota stat node %s%s/%s: %q", QuotaRoot, prefix, QuotaStatNode, n.data))
		return
	}
	st["count"] = st.get("count") + dCount
	st["bytes"] = st.get("bytes") + dBytes
	c := n.clone()
	c.data = st.bytes()
	t.put(c)
}

// quotaCreated follows the create of path: a zookeeper_stats node below /zookeeper/quota gets
// its path's usage counted afresh (DataTree.updateQuotaForPath), then the node counts towards
// its own longest quota'd prefix, if any.
func (t *txn) quotaCreated(path string, n *node) {
	if t.quota == QuotaOff {
		return
	}
	if parent, ok := splitParent(path); ok && path[len(parent)+1:] == QuotaStatNode && strings.HasPrefix(parent, QuotaRoot+"/") {
		prefix := parent[len(QuotaRoot):]
		count, bytes := t.usage(prefix)
		st := quotaTrack{"count": count, "bytes": bytes}
		c := n.clone()
		c.data = st.bytes()
		t.put(c)
	}
	t.quotaCount(path, 1, int64(len(n.data)))
}

// usage counts the node at path and every node below it in the overlay, stubs excluded, and
// the bytes of their data (DataTree.getCounts; 0, 0 when there is no node at path).
func (t *txn) usage(path string) (count, bytes int64) {
	key, ok := keyOf(path)
	if !ok {
		return 0, 0
	}
	visit := func(n *node) {
		if n != nil && !n.isStub() {
			count++
			bytes += int64(len(n.data))
		}
	}
	visit(t.get(key))
	lo, hi := subtreeRange(key)
	t.s.tree.nodes.AscendRange(&node{key: lo}, &node{key: hi}, func(n *node) bool {
		if _, staged := t.changes[n.key]; !staged {
			visit(n)
		}
		return true
	})
	for k, n := range t.changes {
		if k >= lo && k < hi {
			visit(n)
		}
	}
	return count, bytes
}

// quotaCheck is ZooKeeperServer.checkQuota for a write of path that changes its prefix's usage
// by (dCount, dBytes): with QuotaEnforce, QUOTAEXCEEDED when a hard limit would be passed; a
// soft limit passed only logs.
func (t *txn) quotaCheck(path string, dCount, dBytes int64) wire.Err {
	if t.quota != QuotaEnforce {
		return wire.ErrOK
	}
	prefix, ok := t.quotaPrefix(path)
	if !ok {
		return wire.ErrOK
	}
	lkey, _ := quotaNodeKey(prefix, QuotaLimitNode)
	ln := t.visible(lkey)
	if ln == nil {
		return wire.ErrOK
	}
	limits, ok := parseQuotaTrack(ln.data)
	if !ok {
		t.s.quotaLog(fmt.Sprintf("Unreadable quota limit node %s%s/%s: %q", QuotaRoot, prefix, QuotaLimitNode, ln.data))
		return wire.ErrOK
	}
	checkCount := dCount != 0 && (limits.get("count") > -1 || limits.get("countHardLimit") > -1)
	checkBytes := dBytes != 0 && (limits.get("bytes") > -1 || limits.get("byteHardLimit") > -1)
	if !checkCount && !checkBytes {
		return wire.ErrOK
	}
	skey, _ := quotaNodeKey(prefix, QuotaStatNode)
	sn := t.visible(skey)
	if sn == nil {
		t.s.quotaLog("Missing quota stat node " + QuotaRoot + prefix + "/" + QuotaStatNode)
		return wire.ErrOK
	}
	stats, ok := parseQuotaTrack(sn.data)
	if !ok {
		t.s.quotaLog(fmt.Sprintf("Unreadable quota stat node %s%s/%s: %q", QuotaRoot, prefix, QuotaStatNode, sn.data))
		return wire.ErrOK
	}
	over := func(what, limitName string, current, soft, hard int64) bool {
		limit, kind := soft, "soft"
		if hard > -1 {
			limit, kind = hard, "hard"
		}
		if current <= limit {
			return false
		}
		t.s.quotaLog(fmt.Sprintf("Quota exceeded: %s [current %s=%d, %s%s=%d]", prefix, what, current, kind, limitName, limit))
		return hard > -1
	}
	if checkCount && over("count", "CountLimit", stats.get("count")+dCount, limits.get("count"), limits.get("countHardLimit")) {
		return wire.ErrQuotaExceeded
	}
	if checkBytes && over("bytes", "ByteLimit", stats.get("bytes")+dBytes, limits.get("bytes"), limits.get("byteHardLimit")) {
		return wire.ErrQuotaExceeded
	}
	return wire.ErrOK
}

// quotaLog records a quota message of this apply; the replica (replica.Machine) logs it, rate
// limited, after the batch. Every replica records the same messages.
func (s *State) quotaLog(msg string) {
	if len(s.quotaMsgs) < 64 {
		s.quotaMsgs = append(s.quotaMsgs, msg)
	}
}

// TakeQuotaMessages returns and forgets the quota messages recorded since the last call.
func (s *State) TakeQuotaMessages() []string {
	m := s.quotaMsgs
	s.quotaMsgs = nil
	return m
}

// quotaLockKeys calls f with the keys of the zookeeper_limits and zookeeper_stats nodes of
// every prefix of path: a prepared transaction with quotas on locks them, so nothing changes
// the limits and usage its ops were evaluated against before it commits.
//
// They are the keys quotaNodeKey gives for each prefix, with the path replaced once: a
// prefix's key is the same prefix of the path's, since the replacement is byte for byte.
func quotaLockKeys(path string, f func(string)) {
	pk := strings.ReplaceAll(path, "/", string(rune(keySep)))
	quotaPrefixes(path, func(p string) bool {
		if strings.IndexByte(p, keySep) < 0 { // else quotaNodeKey refuses it: no key
			f(quotaKeyOf(pk[:len(p)], QuotaLimitNode))
			f(quotaKeyOf(pk[:len(p)], QuotaStatNode))
		}
		return true
	})
}

// quotaConflict reports whether op of a batch with quotas on would change the stats node of a
// quota'd prefix that the prepared transaction p (with quotas on) locked.
func (s *State) quotaConflict(op *Op, p *preparedTxn) bool {
	hit := false
	opWrites(op, func(path string, _ bool) {
		quotaPrefixes(path, func(q string) bool {
			lk, ok1 := quotaNodeKey(q, QuotaLimitNode)
			sk, ok2 := quotaNodeKey(q, QuotaStatNode)
			if ok1 && ok2 {
				if n := s.tree.get(lk); n != nil && !n.isStub() && p.locked(sk) {
					hit = true
				}
			}
			return !hit
		})
	})
	return hit
}

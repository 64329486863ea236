package server

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/router"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// handle dispatches one request frame. It returns false when the connection must close.
func (c *conn) handle(frame []byte) bool {
	d := wire.NewDecoder(frame)
	var h wire.RequestHeader
	if err := h.Decode(d); err != nil {
		c.logBad("decoding request header", err)
		return false
	}
	body := d.Rest()
	// One clock reading per request serves the read staleness check and the latency
	// statistics (reading the clock is not free on every machine); the frame reader reported
	// the session's activity when the frame arrived (inbound.go).
	now := time.Now()
	c.reqNow = now
	c.s.o.Metrics.countOp(h.Op)
	if h.Op != wire.OpAuth && h.Op != wire.OpSASL && !c.s.o.SASL.Admits(c.AuthIDs()) {
		return c.refuseUnauthenticated(h) // enforce.auth.*, sessionRequireClientSASLAuth (sasl.go)
	}
	if c.group != nil && !groupOpcode(h.Op) {
		c.flushGroup() // this request waits behind the group's writes (group.go)
	}
	if c.readOnly {
		switch {
		case h.Op == wire.OpCloseSession:
			return c.endReadOnly(h)
		case refusedReadOnly(h.Op):
			return c.handleReadOnlyRefused(h)
		}
	}
	hd := handlers[h.Op]
	if hd.raw != nil {
		return hd.raw(c, h, body)
	}
	rec, err := wire.DecodeRequest(h.Op, body)
	if errors.Is(err, wire.ErrUnknownOp) {
		c.s.o.Log.Warn("unknown opcode, closing connection", "op", int32(h.Op), "remote", c.nc.RemoteAddr().String())
		if c.waitIdle() {
			// UnimplementedRequestProcessor: the reply carries the request's zxid, -1 for a
			// request that never became a txn.
			c.send(wire.AppendReply(nil, wire.ReplyHeader{Xid: h.Xid, Zxid: -1, Err: wire.ErrUnimplemented}, nil))
		}
		return false
	}
	if err == nil && c.park(h, rec) {
		return true
	}
	if !c.waitIdle() {
		return false
	}
	if err != nil {
		c.s.o.Log.Warn("undecodable request", "op", opName(h.Op), "remote", c.nc.RemoteAddr().String(), "err", err)
		if h.Op == wire.OpMultiRead && multiReadOfWrites(body) {
			// ZooKeeper decodes a multiRead of write ops, fails on the first one in
			// FinalRequestProcessor ("Invalid type of op") and sends the empty MultiResponse it
			// had started along with MARSHALLINGERROR.
			c.send(wire.AppendReply(nil, wire.ReplyHeader{Xid: h.Xid, Zxid: c.replyZxid(0), Err: wire.ErrMarshallingError},
				&wire.MultiResponse{}))
			return true
		}
		c.reply(h.Xid, wire.ErrMarshallingError, nil)
		return true
	}
	defer func() { c.s.stats.observe(time.Since(now)) }()
	if hd.decoded == nil {
		c.s.o.Log.Warn("unsupported opcode, closing connection", "op", int32(h.Op))
		c.reply(h.Xid, wire.ErrUnimplemented, nil)
		return false
	}
	return hd.decoded(c, h, rec)
}

// An opHandler serves one opcode: it answers the request (or queues its answer in order, as
// writes and sync do) and returns false when the connection must close. Exactly one of its
// functions is set.
type opHandler struct {
	// raw gets the request body as it arrived, before it is decoded and before this
	// connection's earlier requests are answered: the handler decodes what it needs and waits
	// for them (waitIdle) or queues behind them (reserve) itself.
	raw func(c *conn, h wire.RequestHeader, body []byte) bool
	// decoded gets the decoded request once this connection's earlier requests are answered;
	// its time counts in the latency statistics. A body that does not decode is answered
	// before (MARSHALLINGERROR), never passed here.
	decoded func(c *conn, h wire.RequestHeader, rec wire.Record) bool
}

// handlers is the dispatch table of handle. An opcode that is not here is answered with
// UNIMPLEMENTED and closes the connection, as ZooKeeper's UnimplementedRequestProcessor does.
var handlers = map[wire.OpCode]opHandler{
	wire.OpPing:         {raw: (*conn).handlePing},
	wire.OpAuth:         {raw: (*conn).handleAuth},
	wire.OpSASL:         {raw: (*conn).handleSASL},
	wire.OpCloseSession: {raw: (*conn).handleClose},
	wire.OpSync:         {raw: (*conn).handleSync},

	wire.OpCreate:          {raw: (*conn).handleWrite},
	wire.OpCreate2:         {raw: (*conn).handleWrite},
	wire.OpCreateContainer: {raw: (*conn).handleWrite},
	wire.OpCreateTTL:       {raw: (*conn).handleWrite},
	wire.OpDelete:          {raw: (*conn).handleWrite},
	wire.OpSetData:         {raw: (*conn).handleWrite},
	wire.OpSetACL:          {raw: (*conn).handleWrite},
	wire.OpMulti:           {raw: (*conn).handleWrite},
	wire.OpCheck:           {raw: (*conn).handleWrite},

	wire.OpDeleteContainer: {raw: (*conn).handleServerOnly},
	wire.OpCreateSession:   {raw: (*conn).handleServerOnly},

	wire.OpExists:               {decoded: (*conn).handleWatchableRead},
	wire.OpGetData:              {decoded: (*conn).handleWatchableRead},
	wire.OpGetChildren:          {decoded: (*conn).handleWatchableRead},
	wire.OpGetChildren2:         {decoded: (*conn).handleWatchableRead},
	wire.OpGetACL:               {decoded: (*conn).handlePathRead},
	wire.OpGetAllChildrenNumber: {decoded: (*conn).handlePathRead},
	wire.OpGetEphemerals:        {decoded: (*conn).handleGetEphemerals},
	wire.OpMultiRead:            {decoded: (*conn).handleMultiRead},
	wire.OpSetWatches:           {decoded: (*conn).handleSetWatches},
	wire.OpSetWatches2:          {decoded: (*conn).handleSetWatches},
	wire.OpAddWatch:             {decoded: (*conn).handleAddWatch},
	wire.OpCheckWatches:         {decoded: (*conn).handleRemoveWatches},
	wire.OpRemoveWatches:        {decoded: (*conn).handleRemoveWatches},
	wire.OpWhoAmI:               {decoded: (*conn).handleWhoAmI},
	wire.OpReconfig:             {decoded: (*conn).handleReconfig},
}

// handlePing answers a ping once the requests before it are answered.
func (c *conn) handlePing(wire.RequestHeader, []byte) bool {
	if !c.waitIdle() {
		return false
	}
	// ZooKeeper answers every ping with xid -2, whatever xid it carried.
	c.reply(wire.XidPing, wire.ErrOK, nil)
	return true
}

// handleServerOnly answers deleteContainer and createSession: valid request types that only
// servers generate. ZooKeeper 3.8.0's PrepRequestProcessor turns them into an error txn
// (BADARGUMENTS for deleteContainer, MARSHALLINGERROR for createSession, whose body does not
// decode as a client's) and keeps the connection. (ZooKeeper's error txn also takes a zxid;
// Corral's reply does not.)
func (c *conn) handleServerOnly(h wire.RequestHeader, _ []byte) bool {
	if !c.waitIdle() {
		return false
	}
	errc := wire.ErrBadArguments
	if h.Op == wire.OpCreateSession {
		errc = wire.ErrMarshallingError
	}
	c.reply(h.Xid, errc, nil)
	return true
}

// handlePathRead serves getACL and getAllChildrenNumber from the view of the path's shard; for
// "/" getAllChildrenNumber adds every other shard's nodes.
func (c *conn) handlePathRead(h wire.RequestHeader, rec wire.Record) bool {
	path := readPath(rec)
	var errc wire.Err
	var resp wire.Record
	sh, v, err := c.s.o.Router.Read(path, c.readBound(), func(_ *router.Shard, v *shard.View) {
		errc, resp = v.Read(h.Op, rec, c.AuthIDs())
	})
	if !c.readOK(err) {
		return false
	}
	zxid := v.Zxid()
	if n, ok := resp.(*wire.GetAllChildrenNumberResponse); ok && errc == wire.ErrOK && path == "/" {
		// Every top-level subtree on another shard counts too (the root shard holds
		// only their child entries, which it does not count).
		for _, o := range c.s.o.Router.Shards() {
			if o == sh {
				continue
			}
			ov, ok := c.readView(o, 0)
			if !ok {
				return false
			}
			n.TotalNumber += int32(ov.Len())
			zxid = max(zxid, ov.Zxid())
		}
	}
	c.replyAt(h.Xid, errc, resp, zxid)
	return true
}

// handleReconfig refuses reconfig (Corral changes membership through its admin port), as
// ZooKeeper does with reconfigEnabled=false, and audits the refusal.
func (c *conn) handleReconfig(h wire.RequestHeader, _ wire.Record) bool {
	c.auditReconfig()
	c.reply(h.Xid, wire.ErrReconfigDisabled, nil)
	return true
}

// multiReadOfWrites reports whether body is a well-formed multi of write ops only.
func multiReadOfWrites(body []byte) bool {
	var m wire.MultiRequest
	return m.Decode(wire.NewDecoder(body)) == nil && len(m.Ops) > 0 && !m.ReadOnly()
}

func readPath(rec wire.Record) string {
	switch r := rec.(type) {
	case *wire.ExistsRequest:
		return r.Path
	case *wire.GetDataRequest:
		return r.Path
	case *wire.GetChildrenRequest:
		return r.Path
	case *wire.GetACLRequest:
		return r.Path
	case *wire.GetAllChildrenNumberRequest:
		return r.Path
	}
	return "/"
}

// handleWatchableRead serves exists, getData, getChildren and getChildren2, registering the
// watch under the shard's registration lock (see the package doc).
func (c *conn) handleWatchableRead(h wire.RequestHeader, rec wire.Record) bool {
	var path string
	var watch bool
	switch r := rec.(type) {
	case *wire.ExistsRequest:
		path, watch = r.Path, r.Watch
	case *wire.GetDataRequest:
		path, watch = r.Path, r.Watch
	case *wire.GetChildrenRequest:
		path, watch = r.Path, r.Watch
	}
	if !watch {
		var errc wire.Err
		var resp wire.Record
		_, v, err := c.s.o.Router.Read(path, c.readBound(), func(_ *router.Shard, v *shard.View) {
			errc, resp = v.Read(h.Op, rec, c.AuthIDs())
		})
		if !c.readOK(err) {
			return false
		}
		c.replyAt(h.Xid, errc, resp, v.Zxid())
		return true
	}
	c.watched.Store(true)
	var errc wire.Err
	var resp wire.Record
	_, v, unlock, err := c.s.o.Router.ReadRegistered(path, c.readBound(), func(_ *router.Shard, v *shard.View) {
		errc, resp = v.Read(h.Op, rec, c.AuthIDs())
		switch {
		case h.Op == wire.OpExists && (errc == wire.ErrOK || errc == wire.ErrNoNode):
			// exists registers a data watch whether or not the node exists.
			c.s.o.Hub.AddData(c, path)
		case h.Op == wire.OpGetData && errc == wire.ErrOK:
			c.s.o.Hub.AddData(c, path)
		case (h.Op == wire.OpGetChildren || h.Op == wire.OpGetChildren2) && errc == wire.ErrOK:
			c.s.o.Hub.AddChild(c, path)
		}
	})
	if !c.readOK(err) {
		return false
	}
	c.replyAt(h.Xid, errc, resp, v.Zxid())
	unlock()
	return true
}

func (c *conn) handleGetEphemerals(h wire.RequestHeader, rec wire.Record) bool {
	r := rec.(*wire.GetEphemeralsRequest)
	var all []string
	for _, sh := range c.s.o.Router.Shards() {
		if v := sh.View(); v != nil {
			all = append(all, v.Ephemerals(c.sessionID, r.PrefixPath)...)
		}
	}
	if all == nil {
		all = []string{}
	}
	// A top-level ephemeral on another shard than "/" is listed by its own shard and by the
	// root shard's child entry.
	sort.Strings(all)
	all = slices.Compact(all)
	c.reply(h.Xid, wire.ErrOK, &wire.GetEphemeralsResponse{Ephemerals: all})
	return true
}

func (c *conn) handleMultiRead(h wire.RequestHeader, rec wire.Record) bool {
	m := rec.(*wire.MultiRequest)
	resp := &wire.MultiResponse{Results: make([]wire.MultiResult, 0, len(m.Ops))}
	ids := c.AuthIDs()
	var zxid int64
	for _, op := range m.Ops {
		var res wire.MultiResult
		var path string
		switch {
		case op.GetData != nil:
			path = op.GetData.Path
		case op.GetChildren != nil:
			path = op.GetChildren.Path
		}
		_, v, err := c.s.o.Router.Read(path, c.readBound(), func(_ *router.Shard, v *shard.View) {
			switch {
			case op.GetData != nil:
				errc, rr := v.Read(wire.OpGetData, op.GetData, ids)
				if errc == wire.ErrOK {
					g := rr.(*wire.GetDataResponse)
					res = wire.MultiResult{Op: wire.OpGetData, Data: g.Data, Stat: g.Stat}
				} else {
					res = wire.MultiResult{Op: wire.OpError, Err: errc}
				}
			case op.GetChildren != nil:
				errc, rr := v.Read(wire.OpGetChildren, op.GetChildren, ids)
				if errc == wire.ErrOK {
					res = wire.MultiResult{Op: wire.OpGetChildren, Children: rr.(*wire.GetChildrenResponse).Children}
				} else {
					res = wire.MultiResult{Op: wire.OpError, Err: errc}
				}
			}
		})
		if !c.readOK(err) {
			return false
		}
		zxid = max(zxid, v.Zxid())
		resp.Results = append(resp.Results, res)
	}
	c.replyAt(h.Xid, wire.ErrOK, resp, zxid)
	return true
}

func (c *conn) handleSetWatches(h wire.RequestHeader, rec wire.Record) bool {
	var rel int64
	var data, exist, child, pers, rec2 []string
	switch r := rec.(type) {
	case *wire.SetWatches:
		rel, data, exist, child = r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches
	case *wire.SetWatches2:
		rel, data, exist, child, pers, rec2 = r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches,
			r.PersistentWatches, r.PersistentRecursiveWatches
	}
	// A null list (vector length -1; real clients send empty ones) makes ZooKeeper 3.8.0's
	// DataTree.setWatches throw a NullPointerException when it reaches it: the lists before it
	// take effect, the rest do not, and the reply is MARSHALLINGERROR.
	lists := []*[]string{&data, &exist, &child}
	if _, ok := rec.(*wire.SetWatches2); ok {
		lists = append(lists, &pers, &rec2)
	}
	malformed := false
	for _, l := range lists {
		if *l == nil {
			malformed = true
		}
		if malformed {
			*l = nil
		}
	}
	// Every shard first reflects what the client saw (a session moving to this server may have
	// seen writes this server's replicas have not applied yet), so the catch-up below compares
	// relZxid with state at least as new as the client's.
	c.watched.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), c.writeTimeout())
	defer cancel()
	for _, sh := range c.s.o.Router.Shards() {
		if err := c.s.o.Router.EnsureClosed(ctx, sh, max(rel, c.lastZxid.Load())); err != nil {
			c.catchUpFailed(sh, err)
			return false
		}
	}
	unlock := c.s.o.Router.LockAll()
	lookup := func(path string) (int64, int64, bool) {
		sh := c.s.o.Router.Lookup(path)
		if sh == nil || sh.View() == nil {
			return 0, 0, false
		}
		n, ok := sh.View().Get(path)
		if !ok {
			return 0, 0, false
		}
		st := n.Stat()
		// A zxid from rel's clock compares exactly: every change with such a zxid up to rel
		// was applied (and its event queued) on the client's old server before that reply.
		// Zxids of another clock (another shard's, or a subtree that moved here from another
		// shard) count as new when recent (recentAsNew).
		exact := func(z int64) int64 {
			if shard.ZxidTag(z) == shard.ZxidTag(rel) {
				return z
			}
			return recentAsNew(z, rel)
		}
		return exact(st.Mzxid), exact(st.Pzxid), true
	}
	c.s.o.Hub.SetWatches(c, rel, data, exist, child, pers, rec2, lookup)
	if malformed {
		c.reply(h.Xid, wire.ErrMarshallingError, nil)
	} else {
		c.reply(h.Xid, wire.ErrOK, nil)
	}
	unlock()
	return true
}

// handleAddWatch registers a persistent (recursive) watch. As in ZooKeeper 3.8.0 the path is not
// validated (a watch on a path no change can have never fires), and an unknown mode fails in
// WatcherMode.fromZooDef with an IllegalArgumentException, which FinalRequestProcessor answers
// with MARSHALLINGERROR.
func (c *conn) handleAddWatch(h wire.RequestHeader, rec wire.Record) bool {
	r := rec.(*wire.AddWatchRequest)
	if r.Mode != wire.AddWatchPersistent && r.Mode != wire.AddWatchPersistentRecursive {
		c.reply(h.Xid, wire.ErrMarshallingError, nil)
		return true
	}
	c.watched.Store(true)
	unlock := c.s.o.Router.LockAll()
	if r.Mode == wire.AddWatchPersistent {
		c.s.o.Hub.AddPersistent(c, r.Path)
	} else {
		c.s.o.Hub.AddPersistentRecursive(c, r.Path)
	}
	c.reply(h.Xid, wire.ErrOK, &wire.ErrorResponse{Err: wire.ErrOK})
	unlock()
	return true
}

func (c *conn) handleRemoveWatches(h wire.RequestHeader, rec wire.Record) bool {
	var path string
	var typ int32
	var remove bool
	switch r := rec.(type) {
	case *wire.CheckWatchesRequest:
		path, typ = r.Path, r.Type
	case *wire.RemoveWatchesRequest:
		path, typ, remove = r.Path, r.Type, true
	}
	if typ < wire.WatcherChildren || typ > wire.WatcherAny {
		// ZooKeeper 3.8.0's WatcherType.fromInt knows 1..3 and throws a RuntimeException
		// otherwise: MARSHALLINGERROR.
		c.reply(h.Xid, wire.ErrMarshallingError, nil)
		return true
	}
	var ok bool
	if remove {
		ok = c.s.o.Hub.Remove(c, path, typ)
	} else {
		ok = c.s.o.Hub.Has(c, path, typ)
	}
	if !ok {
		c.reply(h.Xid, wire.ErrNoWatcher, nil)
		return true
	}
	c.reply(h.Xid, wire.ErrOK, nil)
	return true
}

func (c *conn) handleWhoAmI(h wire.RequestHeader, _ wire.Record) bool {
	ids := zkAuthSetOrder(c.AuthIDs())
	resp := &wire.WhoAmIResponse{ClientInfo: make([]wire.ClientInfo, 0, len(ids))}
	for _, id := range ids {
		user := id.ID
		if id.Scheme == "digest" { // DigestAuthenticationProvider.getUserName: id.split(":")[0]
			user, _, _ = strings.Cut(id.ID, ":")
		}
		resp.ClientInfo = append(resp.ClientInfo, wire.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	c.reply(h.Xid, wire.ErrOK, resp)
	return true
}

// handleAuth processes addAuth. ZooKeeper answers it out of band with xid -4.
func (c *conn) handleAuth(h wire.RequestHeader, body []byte) bool {
	var p wire.AuthPacket
	if err := p.Decode(wire.NewDecoder(body)); err != nil {
		c.logBad("decoding auth packet", err)
		return false
	}
	if !c.waitIdle() {
		return false
	}
	var add []wire.ID
	switch p.Scheme {
	case "digest":
		// Any credentials are accepted, with or without a colon: ZooKeeper's
		// DigestAuthenticationProvider makes "user:base64(sha1(all))" of whatever it gets.
		user := string(p.Auth)
		id := acl.Digest(user)
		add = append(add, wire.ID{Scheme: "digest", ID: id})
		if c.s.o.SuperDigest != "" && id == c.s.o.SuperDigest {
			add = append(add, wire.ID{Scheme: "super", ID: ""})
		}
	case "ip":
		// IPAuthenticationProvider ignores the credentials and adds the connection's own
		// address, which every connection already has.
		add = append(add, wire.ID{Scheme: "ip", ID: c.ip})
	}
	if len(add) == 0 {
		c.s.o.Log.Warn("authentication failed", "scheme", p.Scheme, "remote", c.nc.RemoteAddr().String())
		c.send(wire.AppendReply(nil, wire.ReplyHeader{Xid: h.Xid, Zxid: 0, Err: wire.ErrAuthFailed}, nil))
		return false
	}
	cur := c.AuthIDs()
	next := append(append(make([]wire.ID, 0, len(cur)+len(add)), cur...), add...)
	next = dedupIDs(next)
	c.auth.Store(&next)
	// ZooKeeper answers with the request's xid: -4 from the Java and C clients and kazoo, an
	// ordinary xid from go-zookeeper.
	c.send(wire.AppendReply(nil, wire.ReplyHeader{Xid: h.Xid, Zxid: 0, Err: wire.ErrOK}, nil))
	return true
}

// zkAuthSetOrder returns ids in the order ZooKeeper 3.8.0 lists a connection's identities (whoAmI):
// ServerCnxn keeps them in a ConcurrentHashMap-backed set, iterated by table bucket, each bucket
// in insertion order. The bucket of an Id is spread(hashCode) & (n-1), with Id.hashCode =
// 37·(37·17 + scheme.hashCode()) + id.hashCode() (jute) and spread(h) = (h ^ h>>>16) & 0x7fffffff;
// the table has 16 buckets until it holds 12 entries and doubles from there (the order inside a
// bucket after such a resize is not reproduced; connections hold a handful of identities).
func zkAuthSetOrder(ids []wire.ID) []wire.ID {
	n := uint32(16)
	for uint32(len(ids)) >= n-n/4 {
		n *= 2
	}
	bucket := func(id wire.ID) uint32 {
		h := 37*(37*17+javaStringHash(id.Scheme)) + javaStringHash(id.ID)
		u := uint32(h)
		return ((u ^ u>>16) & 0x7fffffff) & (n - 1)
	}
	out := append([]wire.ID(nil), ids...)
	sort.SliceStable(out, func(i, j int) bool { return bucket(out[i]) < bucket(out[j]) })
	return out
}

// javaStringHash is java.lang.String.hashCode (over UTF-16 code units, wrapping int32).
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

func dedupIDs(ids []wire.ID) []wire.ID {
	out := ids[:0]
	seen := map[wire.ID]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// handleWrite proposes a write to its shard; the reply is queued in order when it is applied. A
// write spanning shards (a multi over several, or the create or delete of a top-level znode
// that lives on another shard than "/") runs as a cross-shard transaction (handleTxn).
func (c *conn) handleWrite(h wire.RequestHeader, frame []byte) bool {
	// The frame buffer is reused for the next request; the write outlives this call (its op
	// body, and the decoded record a cross-shard transaction keeps, alias this copy).
	body := append([]byte(nil), frame...)
	rec, err := wire.DecodeRequest(h.Op, body)
	if err != nil {
		sl := c.reserve("write")
		c.s.o.Log.Warn("undecodable write request", "op", opName(h.Op), "remote", c.nc.RemoteAddr().String(), "err", err)
		c.complete(sl, c.frame(h.Xid, wire.ErrMarshallingError, 0, nil))
		return true
	}
	plan := c.s.o.Router.PlanWrite(h.Op, rec)
	if plan.Roles != nil {
		return c.handleTxn(h, plan.Multi, plan.Roles, plan.Single)
	}
	sh := plan.Shard
	if sh == nil {
		sl := c.reserve("write")
		c.complete(sl, c.frame(h.Xid, wire.ErrSystemError, 0, nil))
		return true
	}
	// The view the write is issued against: its zxid goes with the op (ViewZxid), and the
	// source of a move sends back writes issued against a view from before the move. So either
	// this view already holds a recent move (and the write waits below for every earlier reply)
	// or the shard sends the write back if a move came first; either way it cannot overtake an
	// earlier write of this connection that the move sent back (docs/design.md §9).
	viewZxid, fenced := sh.Issue(time.Now().UnixMilli())
	if fenced && !c.waitIdle() {
		return false
	}
	if grouped, alive := c.joinGroup(h, rec, body, sh); grouped || !alive {
		return alive
	}
	if !c.writeBarrier(sh.ID) {
		return false
	}
	sl := c.reserveSlot(&slot{start: time.Now(), kind: "write", on: []*router.Shard{sh}, parkable: true})
	op := shard.Op{Session: c.sessionID, Epoch: c.epoch, Auth: c.AuthIDs(), Code: h.Op, Body: body,
		MinZxid: c.lastZxid.Load(), ViewZxid: viewZxid}
	c.parkOn, c.parkShard = c.propose(sl, h, rec, op, sh), sh
	return true
}

// propose submits a single-shard write to sh's proposer; its reply fills sl. It returns the
// request it submitted.
func (c *conn) propose(sl *slot, h wire.RequestHeader, rec wire.Record, op shard.Op, sh *router.Shard) *router.Request {
	r := &router.Request{Op: op, Done: func(res shard.OpResult, err error) {
		switch {
		case err != nil:
			c.writeFailed(sl, err)
		case res.Err == shard.ErrMoved:
			c.reroute(sl, h, rec, op, sh.ID, res.Zxid)
		default:
			c.completeWrite(sl, h, rec, res)
		}
	}}
	c.written.note(sh.ID)
	sh.Proposer.Submit(r)
	return r
}

// frame builds a reply frame with a pre-encoded body.
func (c *conn) frame(xid int32, errc wire.Err, opZxid int64, body []byte) []byte {
	e := wire.NewEncoder(make([]byte, 0, 20+len(body)))
	mark := wire.BeginFrame(e)
	(&wire.ReplyHeader{Xid: xid, Zxid: c.replyZxid(opZxid), Err: errc}).Encode(e)
	e.Raw(body)
	wire.EndFrame(e, mark)
	return e.Bytes()
}

// handleSync makes this server's replica of the path's shard catch up with the leader, then
// echoes the path. It does not check that the path exists (ZooKeeper doesn't).
func (c *conn) handleSync(h wire.RequestHeader, body []byte) bool {
	var r wire.SyncRequest
	if err := r.Decode(wire.NewDecoder(body)); err != nil {
		sl := c.reserve("read")
		c.complete(sl, c.frame(h.Xid, wire.ErrMarshallingError, 0, nil))
		return true
	}
	sl := c.reserve("read")
	sh := c.s.o.Router.Lookup(r.Path)
	if sh == nil {
		sh = c.s.o.Router.Shards()[0]
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.writeTimeout())
		defer cancel()
		err := c.s.o.Sync(ctx, sh.ID)
		if err == nil {
			err = c.s.o.Router.WaitResolved(ctx, sh)
		}
		if err != nil {
			c.s.o.Log.Warn("sync failed", "path", r.Path, "err", err)
			c.complete(sl, c.frame(h.Xid, wire.ErrOperationTimeout, 0, nil))
			return
		}
		c.complete(sl, c.frame(h.Xid, wire.ErrOK, sh.View().Zxid(), encodeRecord(&wire.SyncResponse{Path: r.Path})))
	}()
	return true
}

// handleClose ends the session: ephemerals are removed on every shard before the reply. It
// waits until every earlier request is answered and the connection's ownership epoch is
// recorded on every shard, so that the session manager may close the shards in one round when
// this connection is the session's latest owner (session.Manager.Close).
func (c *conn) handleClose(h wire.RequestHeader, _ []byte) bool {
	if !c.waitIdle() || !c.awaitOwned() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.writeTimeout())
	defer cancel()
	c.closingSession.Store(true)
	if err := c.s.o.Sessions.Close(ctx, c.sessionID, c.epoch, c.written.scope()); err != nil {
		c.s.o.Log.Warn("closeSession did not complete; the session will expire instead", "session", sessionHex(c.sessionID), "err", err)
	}
	c.reply(h.Xid, wire.ErrOK, nil)
	return false
}

var opNames = map[wire.OpCode]string{
	wire.OpCreate: "create", wire.OpDelete: "delete", wire.OpExists: "exists", wire.OpGetData: "getData",
	wire.OpSetData: "setData", wire.OpGetACL: "getACL", wire.OpSetACL: "setACL", wire.OpGetChildren: "getChildren",
	wire.OpSync: "sync", wire.OpPing: "ping", wire.OpGetChildren2: "getChildren2", wire.OpCheck: "check",
	wire.OpMulti: "multi", wire.OpCreate2: "create2", wire.OpReconfig: "reconfig", wire.OpCheckWatches: "checkWatches",
	wire.OpRemoveWatches: "removeWatches", wire.OpCreateContainer: "createContainer", wire.OpCreateTTL: "createTTL",
	wire.OpMultiRead: "multiRead", wire.OpAuth: "auth", wire.OpSetWatches: "setWatches", wire.OpSASL: "sasl",
	wire.OpGetEphemerals: "getEphemerals", wire.OpGetAllChildrenNumber: "getAllChildrenNumber",
	wire.OpSetWatches2: "setWatches2", wire.OpAddWatch: "addWatch", wire.OpWhoAmI: "whoAmI",
	wire.OpCloseSession: "closeSession",
}

func opName(op wire.OpCode) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return "unknown"
}

// setWatchesWindow is how far back from the time encoded in a reconnecting client's relZxid a
// change still counts as possibly unseen (docs/design.md §8, "setWatches across shards").
const setWatchesWindowMs = 10_000

// recentAsNew returns z, or a zxid above rel when z's clock time lies within setWatchesWindowMs
// before rel's (or after it). relZxid may come from another shard's clock than z: a change with
// a smaller zxid can have been applied after the client's last reply (its server lagged on that
// shard, or it committed a little later), so ZooKeeper's "zxid > relZxid" test alone could miss
// its event. Counting recent changes as new fires at worst a spurious event, which clients
// tolerate (they re-read); a missed event they cannot detect.
func recentAsNew(z, rel int64) int64 {
	if z > rel {
		return z
	}
	if shard.ZxidCounter(z)>>12 >= shard.ZxidCounter(rel)>>12-setWatchesWindowMs {
		return rel + 1
	}
	return z
}

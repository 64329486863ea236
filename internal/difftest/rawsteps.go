package difftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/corral/corral/wire"
)

// Raw sessions: a script can open wire-level sessions (RawConn) by name with
// RawOpen or RawConnect and use them in later steps (RawOn and the R*
// helpers). Each target has its own set, kept for the run: at the end of the
// script their remaining events are compared (like the clients'), then the
// sessions still connected are closed.

type rawStoreKey struct{}

type rawStore struct {
	prefix string
	mu     sync.Mutex
	conns  map[string]*RawConn
}

func newRawStore(prefix string) *rawStore {
	return &rawStore{prefix: prefix, conns: map[string]*RawConn{}}
}

func rawStoreFrom(ctx context.Context) *rawStore {
	s, _ := ctx.Value(rawStoreKey{}).(*rawStore)
	return s
}

func (s *rawStore) get(name string) *RawConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[name]
}

// put stores rc under name; a connection stored there before is closed
// (its session is left alone).
func (s *rawStore) put(name string, rc *RawConn) {
	s.mu.Lock()
	old := s.conns[name]
	s.conns[name] = rc
	s.mu.Unlock()
	if old != nil && old != rc {
		old.Close()
	}
}

func (s *rawStore) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.conns))
	for n := range s.conns {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// dropAll closes every connection without closing sessions.
func (s *rawStore) dropAll() {
	s.mu.Lock()
	conns := s.conns
	s.conns = map[string]*RawConn{}
	s.mu.Unlock()
	for _, rc := range conns {
		rc.Close()
	}
}

// closeSessions closes the session of every connection still up.
func (s *rawStore) closeSessions(ctx context.Context) {
	for _, n := range s.names() {
		rc := s.get(n)
		if rc == nil || rc.Err() != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		rc.CloseSession(cctx)
		cancel()
	}
}

// AbsPath maps a script path to the server path inside a raw step: "/" is
// the run's prefix, "/a" is <prefix>/a. A path starting with "=" is taken
// literally without the "=" ("=/zookeeper" is /zookeeper, "=" is the empty
// string); anything else (a relative path) is sent as it is.
func AbsPath(ctx context.Context, p string) string {
	if lit, ok := strings.CutPrefix(p, "="); ok {
		return lit
	}
	prefix := Chroot(ctx)
	switch {
	case p == "/":
		return prefix
	case strings.HasPrefix(p, "/"):
		return prefix + p
	}
	return p
}

// RelPath maps a server path back to script space (the inverse of AbsPath
// for paths inside the prefix; others are returned as they are).
func RelPath(ctx context.Context, p string) string {
	prefix := Chroot(ctx)
	switch {
	case prefix == "":
		return p
	case p == prefix:
		return "/"
	case strings.HasPrefix(p, prefix+"/"):
		return p[len(prefix):]
	}
	return p
}

// RawOn is a raw step on the raw session stored under name: fn gets its
// connection. Label describes the step in reports.
func RawOn(name, label string, fn func(ctx context.Context, rc *RawConn) (Result, error)) Step {
	return Raw(0, name+": "+label, func(ctx context.Context, addr string) (Result, error) {
		st := rawStoreFrom(ctx)
		if st == nil {
			return Result{}, errors.New("raw session step outside a run")
		}
		rc := st.get(name)
		if rc == nil {
			return Result{}, fmt.Errorf("no raw session %q (open it with RawOpen)", name)
		}
		return fn(ctx, rc)
	})
}

// describeHandshake renders what a client can observe of a handshake.
// orig, if set, is the session being resumed: session id and password are
// then reported as same/zero/other instead of being paired.
func describeHandshake(o HandshakeOutcome, orig *wire.ConnectResponse) Result {
	if o.Resp == nil {
		return Result{Values: []string{"no connect response", "closed"}}
	}
	r := o.Resp
	v := []string{
		fmt.Sprintf("protocolVersion=%d", r.ProtocolVersion),
		fmt.Sprintf("timeout=%d", r.TimeOut),
	}
	var res Result
	switch {
	case r.SessionID == 0:
		v = append(v, "sessionId=0")
	case orig != nil && r.SessionID == orig.SessionID:
		v = append(v, "sessionId=same")
	default:
		res.Session = r.SessionID
	}
	switch {
	case len(r.Passwd) == wire.PasswordLen && bytes.Equal(r.Passwd, make([]byte, wire.PasswordLen)):
		v = append(v, "passwd=16 zero bytes")
	case orig != nil && bytes.Equal(r.Passwd, orig.Passwd):
		v = append(v, "passwd=same")
	default:
		v = append(v, fmt.Sprintf("passwd=%d bytes", len(r.Passwd)))
	}
	if r.HasReadOnly {
		v = append(v, fmt.Sprintf("readOnly=%v", r.ReadOnly))
	} else {
		v = append(v, "readOnly byte absent")
	}
	if o.Open {
		v = append(v, "open")
	} else {
		v = append(v, "closed")
	}
	res.Values = v
	return res
}

// RawOpen opens a new session named name (timeout 10 s; readOnlyByte adds
// the optional trailing byte, false, to the ConnectRequest). The result
// reports the handshake; the session is paired across targets.
func RawOpen(name string, readOnlyByte bool) Step {
	return RawConnect("open "+name, NewSessionRequest(10*time.Second, readOnlyByte), name)
}

// RawConnect sends req on a new connection and reports what came back
// (connect response fields, whether the connection stayed open). If it did
// and keepAs is not empty, the connection is kept under that name; otherwise
// a new session is closed again and a resumed one's connection dropped.
func RawConnect(label string, req wire.ConnectRequest, keepAs string) Step {
	return Raw(0, label, func(ctx context.Context, addr string) (Result, error) {
		return rawConnect(ctx, addr, req, nil, keepAs)
	})
}

func rawConnect(ctx context.Context, addr string, req wire.ConnectRequest, orig *wire.ConnectResponse, keepAs string) (Result, error) {
	out, rc, err := RawHandshake(ctx, addr, req)
	if err != nil {
		return Result{}, err
	}
	res := describeHandshake(out, orig)
	if rc != nil {
		if keepAs != "" {
			rawStoreFrom(ctx).put(keepAs, rc)
		} else if req.SessionID == 0 {
			rc.CloseSession(ctx)
		} else {
			rc.Close()
		}
	}
	return res, nil
}

// RawResume reconnects the session of the raw connection from, as a client
// does after losing its connection: a ConnectRequest with its session id,
// password, timeout and the largest zxid it saw, changed by mutate (nil: no
// change). If the server keeps the new connection it is stored as to; from
// is left as it is (drop it first with RawDrop to model a lost connection).
func RawResume(from, to string, label string, mutate func(*wire.ConnectRequest)) Step {
	return Raw(0, fmt.Sprintf("%s: resume as %s (%s)", from, to, label), func(ctx context.Context, addr string) (Result, error) {
		rc := rawStoreFrom(ctx).get(from)
		if rc == nil {
			return Result{}, fmt.Errorf("no raw session %q", from)
		}
		req := wire.ConnectRequest{
			LastZxidSeen: rc.LastZxid(),
			TimeOut:      rc.Resp.TimeOut,
			SessionID:    rc.Resp.SessionID,
			Passwd:       bytes.Clone(rc.Resp.Passwd),
		}
		if mutate != nil {
			mutate(&req)
		}
		orig := rc.Resp
		return rawConnect(ctx, addr, req, &orig, to)
	})
}

// RawDrop closes the connection of raw session name without closing the
// session, as a network failure would; events not collected before are lost.
func RawDrop(name string) Step {
	return RawOn(name, "drop connection", func(ctx context.Context, rc *RawConn) (Result, error) {
		rc.Close()
		return Result{}, nil
	})
}

// RawEvents collects the watch events of raw session name: a barrier (sync
// and exists of the run's prefix) on its connection, then, if wait > 0,
// wait longer for events that should not come. A connection that has ended
// reports its remaining events and "closed".
func RawEvents(name string, wait time.Duration) Step {
	label := "events"
	if wait > 0 {
		label += fmt.Sprintf(" wait=%v", wait)
	}
	return RawOn(name, label, func(ctx context.Context, rc *RawConn) (Result, error) {
		err := rc.Barrier(ctx, Chroot(ctx))
		if err != nil && !errors.Is(err, ErrRawClosed) {
			return Result{}, err
		}
		if err == nil && wait > 0 {
			time.Sleep(wait)
		}
		r := Result{Events: rc.TakeEvents()}
		if err != nil {
			r.Values = []string{"closed"}
		}
		return r, nil
	})
}

// RawCloseSession collects name's events (like RawEvents) and closes its
// session; Err is closeSession's reply code.
func RawCloseSession(name string) Step {
	return RawOn(name, "closeSession", func(ctx context.Context, rc *RawConn) (Result, error) {
		if err := rc.Barrier(ctx, Chroot(ctx)); err != nil && !errors.Is(err, ErrRawClosed) {
			return Result{}, err
		}
		ev := rc.TakeEvents()
		code, err := rc.CloseSession(ctx)
		if err != nil {
			return Result{}, err
		}
		return Result{Err: code, Events: ev}, nil
	})
}

// probe reports whether the connection still serves requests: an exists of
// the run's prefix either comes back ("open") or the connection ends
// ("closed").
func probe(ctx context.Context, rc *RawConn) (string, error) {
	_, err := rc.Call(ctx, wire.OpExists, &wire.ExistsRequest{Path: Chroot(ctx)})
	switch {
	case err == nil:
		return "open", nil
	case errors.Is(err, ErrRawClosed):
		return "closed", nil
	}
	return "", err
}

// call runs one request and turns a closed connection into a Result.
func call(ctx context.Context, rc *RawConn, op wire.OpCode, req wire.Record) (RawReply, *Result, error) {
	r, err := rc.Call(ctx, op, req)
	if errors.Is(err, ErrRawClosed) {
		return r, &Result{Err: "connection closed without reply"}, nil
	}
	if err != nil {
		return r, nil, err
	}
	return r, nil, nil
}

func statOf(s wire.Stat) *Stat {
	return &Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version,
		Cversion: s.Cversion, Aversion: s.Aversion, EphemeralOwner: s.EphemeralOwner,
		DataLength: s.DataLength, NumChildren: s.NumChildren, Pzxid: s.Pzxid}
}

// RGet is getData on raw session name.
func RGet(name, path string, watch bool) Step {
	return RawOn(name, fmt.Sprintf("getData %q watch=%v", path, watch), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, closed, err := call(ctx, rc, wire.OpGetData, &wire.GetDataRequest{Path: AbsPath(ctx, path), Watch: watch})
		if closed != nil || err != nil {
			return deref(closed), err
		}
		if r.Header.Err != 0 {
			return Result{Err: r.ErrName()}, nil
		}
		var g wire.GetDataResponse
		if err := r.Decode(&g); err != nil {
			return Result{}, err
		}
		return Result{Data: bytes.Clone(g.Data), Stat: statOf(g.Stat)}, nil
	})
}

// RExists is exists on raw session name.
func RExists(name, path string, watch bool) Step {
	return RawOn(name, fmt.Sprintf("exists %q watch=%v", path, watch), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, closed, err := call(ctx, rc, wire.OpExists, &wire.ExistsRequest{Path: AbsPath(ctx, path), Watch: watch})
		if closed != nil || err != nil {
			return deref(closed), err
		}
		if r.Header.Err != 0 {
			return Result{Err: r.ErrName()}, nil
		}
		var g wire.ExistsResponse
		if err := r.Decode(&g); err != nil {
			return Result{}, err
		}
		return Result{Stat: statOf(g.Stat)}, nil
	})
}

// RChildren is getChildren (opcode 8) on raw session name.
func RChildren(name, path string, watch bool) Step {
	return RawOn(name, fmt.Sprintf("getChildren %q watch=%v", path, watch), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, closed, err := call(ctx, rc, wire.OpGetChildren, &wire.GetChildrenRequest{Path: AbsPath(ctx, path), Watch: watch})
		if closed != nil || err != nil {
			return deref(closed), err
		}
		if r.Header.Err != 0 {
			return Result{Err: r.ErrName()}, nil
		}
		var g wire.GetChildrenResponse
		if err := r.Decode(&g); err != nil {
			return Result{}, err
		}
		return Result{Children: sortedCopy(g.Children)}, nil
	})
}

// RSet is setData on raw session name; the reply zxid is compared.
func RSet(name, path string, data []byte, version int32) Step {
	return RawOn(name, fmt.Sprintf("setData %q %s v=%d", path, fmtData(data), version), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, closed, err := call(ctx, rc, wire.OpSetData, &wire.SetDataRequest{Path: AbsPath(ctx, path), Data: data, Version: version})
		if closed != nil || err != nil {
			return deref(closed), err
		}
		if r.Header.Err != 0 {
			return Result{Err: r.ErrName(), Zxid: r.Header.Zxid}, nil
		}
		var g wire.SetDataResponse
		if err := r.Decode(&g); err != nil {
			return Result{}, err
		}
		return Result{Stat: statOf(g.Stat), Zxid: r.Header.Zxid}, nil
	})
}

// RDelete is delete on raw session name; the reply zxid is compared.
func RDelete(name, path string, version int32) Step {
	return RawOn(name, fmt.Sprintf("delete %q v=%d", path, version), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, closed, err := call(ctx, rc, wire.OpDelete, &wire.DeleteRequest{Path: AbsPath(ctx, path), Version: version})
		if closed != nil || err != nil {
			return deref(closed), err
		}
		return Result{Err: r.ErrName(), Zxid: r.Header.Zxid}, nil
	})
}

// RCreate sends a create with opcode op (create 1, create2 15,
// createContainer 19 or createTTL 21; ttl is sent only with 21) on raw
// session name. The reply is decoded as ZooKeeper's client would for op
// (CreateResponse for 1, Create2Response otherwise); Values record the body
// length, so a reply of the other shape shows; the reply zxid is compared.
func RCreate(name string, op wire.OpCode, path string, data []byte, flags int32, ttl int64) Step {
	return RCreateACL(name, op, path, data, flags, ttl, nil)
}

// RCreateACL is RCreate with an ACL (nil: world:anyone:ALL; use EmptyACL()
// for an empty list).
func RCreateACL(name string, op wire.OpCode, path string, data []byte, flags int32, ttl int64, acl []ACL) Step {
	label := fmt.Sprintf("%s %q %s flags=%d", opLabel(op), path, fmtData(data), flags)
	if op == wire.OpCreateTTL {
		label += fmt.Sprintf(" ttl=%d", ttl)
	}
	if acl != nil {
		label += " acl=" + fmtACL(acl)
	}
	return RawOn(name, label, func(ctx context.Context, rc *RawConn) (Result, error) {
		p := AbsPath(ctx, path)
		wacl := wire.OpenACLUnsafe
		if acl != nil {
			wacl = wireACL(acl)
		}
		var req wire.Record = &wire.CreateRequest{Path: p, Data: data, ACL: wacl, Flags: flags}
		if op == wire.OpCreateTTL {
			req = &wire.CreateTTLRequest{Path: p, Data: data, ACL: wacl, Flags: flags, TTL: ttl}
		}
		r, closed, err := call(ctx, rc, op, req)
		if closed != nil || err != nil {
			return deref(closed), err
		}
		res := Result{Err: r.ErrName(), Zxid: r.Header.Zxid, Values: []string{fmt.Sprintf("body=%d bytes", len(r.Body))}}
		if r.Header.Err != 0 {
			return res, nil
		}
		if op == wire.OpCreate {
			var c wire.CreateResponse
			if err := r.Decode(&c); err != nil {
				return Result{}, err
			}
			res.Path = c.Path
			return res, nil
		}
		var c wire.Create2Response
		if err := r.Decode(&c); err != nil {
			res.Values = append(res.Values, "not a Create2Response")
			return res, nil
		}
		res.Path, res.Stat = c.Path, statOf(c.Stat)
		return res, nil
	})
}

// RawRead is one op of a multiRead: OpGetData or OpGetChildren.
type RawRead struct {
	Op    wire.OpCode
	Path  string
	Watch bool
}

// ReadData and ReadChildren build RawReads.
func ReadData(path string, watch bool) RawRead { return RawRead{wire.OpGetData, path, watch} }

// ReadChildren is a getChildren op of a multiRead.
func ReadChildren(path string, watch bool) RawRead { return RawRead{wire.OpGetChildren, path, watch} }

// RMultiRead sends multiRead (22) with ops on raw session name. Each op's
// result is one Multi entry: Err (from an error result), Data and Stat for
// getData, sorted Children for getChildren; Values name the result type.
func RMultiRead(name string, ops ...RawRead) Step {
	parts := make([]string, len(ops))
	for i, o := range ops {
		parts[i] = fmt.Sprintf("%s %q", opLabel(o.Op), o.Path)
		if o.Watch {
			parts[i] += " watch"
		}
	}
	return RawOn(name, "multiRead ["+strings.Join(parts, "; ")+"]", func(ctx context.Context, rc *RawConn) (Result, error) {
		m := &wire.MultiRequest{}
		for _, o := range ops {
			mo := wire.MultiOp{Op: o.Op}
			switch o.Op {
			case wire.OpGetData:
				mo.GetData = &wire.GetDataRequest{Path: AbsPath(ctx, o.Path), Watch: o.Watch}
			case wire.OpGetChildren:
				mo.GetChildren = &wire.GetChildrenRequest{Path: AbsPath(ctx, o.Path), Watch: o.Watch}
			default:
				return Result{}, fmt.Errorf("multiRead op %d", o.Op)
			}
			m.Ops = append(m.Ops, mo)
		}
		return rawMulti(ctx, rc, wire.OpMultiRead, m)
	})
}

// RMultiOps sends a multi or multiRead (op) with arbitrary ops, including
// combinations ZooKeeper rejects.
func RMultiOps(name string, op wire.OpCode, label string, ops func(ctx context.Context) []wire.MultiOp) Step {
	return RawOn(name, opLabel(op)+" "+label, func(ctx context.Context, rc *RawConn) (Result, error) {
		return rawMulti(ctx, rc, op, &wire.MultiRequest{Ops: ops(ctx)})
	})
}

func rawMulti(ctx context.Context, rc *RawConn, op wire.OpCode, m *wire.MultiRequest) (Result, error) {
	r, closed, err := call(ctx, rc, op, m)
	if closed != nil || err != nil {
		return deref(closed), err
	}
	res := Result{Err: r.ErrName()}
	if r.Header.Err != 0 {
		if len(r.Body) > 0 {
			res.Values = []string{fmt.Sprintf("body=%d bytes", len(r.Body))}
		}
		return res, nil
	}
	var mr wire.MultiResponse
	if err := r.Decode(&mr); err != nil {
		return Result{}, err
	}
	res.Multi = make([]Result, len(mr.Results))
	for i, x := range mr.Results {
		sub := Result{Values: []string{"type=" + opLabel(x.Op)}}
		switch x.Op {
		case wire.OpError:
			sub.Err = CodeName(int32(x.Err))
		case wire.OpGetData:
			sub.Data, sub.Stat = bytes.Clone(x.Data), statOf(x.Stat)
		case wire.OpGetChildren:
			sub.Children = sortedCopy(x.Children)
		case wire.OpCreate:
			sub.Path = x.Path
		case wire.OpCreate2:
			sub.Path, sub.Stat = x.Path, statOf(x.Stat)
		case wire.OpSetData:
			sub.Stat = statOf(x.Stat)
		}
		if x.Op != wire.OpError && x.Err != 0 {
			sub.Err = CodeName(int32(x.Err))
		}
		res.Multi[i] = sub
	}
	return res, nil
}

// RGetEphemerals sends getEphemerals(prefix) on raw session name (prefix
// through AbsPath: "/e" is <run prefix>/e, "=" sends the empty string, "=/"
// the root). Children holds the returned paths in script space, sorted
// (ZooKeeper returns them in HashSet order).
func RGetEphemerals(name, prefix string) Step {
	return RawOn(name, fmt.Sprintf("getEphemerals %q", prefix), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, closed, err := call(ctx, rc, wire.OpGetEphemerals, &wire.GetEphemeralsRequest{PrefixPath: AbsPath(ctx, prefix)})
		if closed != nil || err != nil {
			return deref(closed), err
		}
		if r.Header.Err != 0 {
			return Result{Err: r.ErrName()}, nil
		}
		var g wire.GetEphemeralsResponse
		if err := r.Decode(&g); err != nil {
			return Result{}, err
		}
		out := make([]string, len(g.Ephemerals))
		for i, p := range g.Ephemerals {
			out[i] = RelPath(ctx, p)
		}
		sort.Strings(out)
		return Result{Children: out}, nil
	})
}

// RAllChildren sends getAllChildrenNumber(path) on raw session name; Values
// holds the number.
func RAllChildren(name, path string) Step {
	return RawOn(name, fmt.Sprintf("getAllChildrenNumber %q", path), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, closed, err := call(ctx, rc, wire.OpGetAllChildrenNumber, &wire.GetAllChildrenNumberRequest{Path: AbsPath(ctx, path)})
		if closed != nil || err != nil {
			return deref(closed), err
		}
		if r.Header.Err != 0 {
			return Result{Err: r.ErrName()}, nil
		}
		var g wire.GetAllChildrenNumberResponse
		if err := r.Decode(&g); err != nil {
			return Result{}, err
		}
		return Result{Values: []string{fmt.Sprintf("total=%d", g.TotalNumber)}}, nil
	})
}

// RAddWatch sends addWatch(path, mode) on raw session name. Values record
// the reply body (ZooKeeper sends an ErrorResponse with code 0).
func RAddWatch(name, path string, mode int32) Step {
	return RawOn(name, fmt.Sprintf("addWatch %q mode=%d", path, mode), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, closed, err := call(ctx, rc, wire.OpAddWatch, &wire.AddWatchRequest{Path: AbsPath(ctx, path), Mode: mode})
		if closed != nil || err != nil {
			return deref(closed), err
		}
		res := Result{Err: r.ErrName(), Values: []string{fmt.Sprintf("body=%x", r.Body)}}
		return res, nil
	})
}

// RCheckWatches sends checkWatches(path, type) on raw session name.
func RCheckWatches(name, path string, typ int32) Step {
	return RawOn(name, fmt.Sprintf("checkWatches %q type=%d", path, typ), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, closed, err := call(ctx, rc, wire.OpCheckWatches, &wire.CheckWatchesRequest{Path: AbsPath(ctx, path), Type: typ})
		if closed != nil || err != nil {
			return deref(closed), err
		}
		return Result{Err: r.ErrName()}, nil
	})
}

// RRemoveWatches sends removeWatches(path, type) on raw session name.
func RRemoveWatches(name, path string, typ int32) Step {
	return RawOn(name, fmt.Sprintf("removeWatches %q type=%d", path, typ), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, closed, err := call(ctx, rc, wire.OpRemoveWatches, &wire.RemoveWatchesRequest{Path: AbsPath(ctx, path), Type: typ})
		if closed != nil || err != nil {
			return deref(closed), err
		}
		return Result{Err: r.ErrName()}, nil
	})
}

// RWhoAmI sends whoAmI on raw session name; Values hold "scheme user"
// entries in the order the server sends them.
func RWhoAmI(name string) Step {
	return RawOn(name, "whoAmI", func(ctx context.Context, rc *RawConn) (Result, error) {
		r, closed, err := call(ctx, rc, wire.OpWhoAmI, nil)
		if closed != nil || err != nil {
			return deref(closed), err
		}
		if r.Header.Err != 0 {
			return Result{Err: r.ErrName()}, nil
		}
		var w wire.WhoAmIResponse
		if err := r.Decode(&w); err != nil {
			return Result{}, err
		}
		v := []string{}
		if w.ClientInfo == nil {
			v = append(v, "null list")
		}
		for _, ci := range w.ClientInfo {
			v = append(v, ci.AuthScheme+" "+ci.User)
		}
		return Result{Values: v}, nil
	})
}

// RAuth sends auth(scheme, credentials) with xid -4 on raw session name and
// reports the reply code and whether the connection still serves requests.
func RAuth(name, scheme, creds string) Step {
	return RawOn(name, fmt.Sprintf("auth %s %q", scheme, creds), func(ctx context.Context, rc *RawConn) (Result, error) {
		r, err := rc.CallXid(ctx, wire.XidAuth, wire.OpAuth, &wire.AuthPacket{Scheme: scheme, Auth: []byte(creds)})
		if errors.Is(err, ErrRawClosed) {
			return Result{Err: "connection closed without reply"}, nil
		}
		if err != nil {
			return Result{}, err
		}
		state, err := probe(ctx, rc)
		if err != nil {
			return Result{}, err
		}
		return Result{Err: r.ErrName(), Values: []string{state}}, nil
	})
}

// RRequest sends op with body req (nil: empty body) on raw session name and
// reports the reply code, the reply body (hex), the reply zxid (0 or -1,
// which ZooKeeper sends for some requests, or whether it is above the last
// zxid the session saw, i.e. the request used a zxid of its own), the reply
// xid (ZooKeeper answers every ping with -2) and whether the connection
// still serves requests afterwards. For opcodes whose effect is
// the point (reconfig, sasl, unknown ones).
func RRequest(name, label string, op wire.OpCode, req func(ctx context.Context) wire.Record) Step {
	return rRequest(name, label, op, req, true)
}

// RRequestNoZxid is RRequest without the reply zxid's relation to the last
// zxid seen (for requests that take a zxid of their own in ZooKeeper only).
func RRequestNoZxid(name, label string, op wire.OpCode, req func(ctx context.Context) wire.Record) Step {
	return rRequest(name, label, op, req, false)
}

func rRequest(name, label string, op wire.OpCode, req func(ctx context.Context) wire.Record, withZxid bool) Step {
	return RawOn(name, fmt.Sprintf("%s (op %d)", label, op), func(ctx context.Context, rc *RawConn) (Result, error) {
		var rec wire.Record
		if req != nil {
			rec = req(ctx)
		}
		// The zxid of the last write this session saw: a reply zxid above
		// it means the request consumed a zxid of its own.
		if _, err := rc.Call(ctx, wire.OpSync, &wire.SyncRequest{Path: Chroot(ctx)}); err != nil {
			return Result{}, err
		}
		before := rc.LastZxid()
		r, closed, err := call(ctx, rc, op, rec)
		if closed != nil || err != nil {
			return deref(closed), err
		}
		var zx string
		switch z := r.Header.Zxid; {
		case z == 0:
			zx = "zxid=0"
		case z < 0:
			zx = fmt.Sprintf("zxid=%d", z)
		case z > before:
			zx = "zxid>last seen"
		case z == before:
			zx = "zxid=last seen"
		default:
			zx = "zxid<last seen"
		}
		xid := "xid=request's"
		if r.Header.Xid != r.ReqXid {
			xid = fmt.Sprintf("xid=%d", r.Header.Xid)
		}
		var state string
		if r.Header.Err == wire.ErrUnimplemented {
			// ZooKeeper closes the connection after UNIMPLEMENTED, but asynchronously: a probe
			// request sent right after can still be answered. Wait for the close instead.
			state = "open"
			select {
			case <-rc.done:
				state = "closed"
			case <-time.After(3 * time.Second):
			}
		} else {
			state, err = probe(ctx, rc)
			if err != nil {
				return Result{}, err
			}
		}
		v := []string{fmt.Sprintf("body=%x", r.Body), zx, xid, state}
		if !withZxid {
			v = append(v[:1], v[2:]...)
		}
		return Result{Err: r.ErrName(), Values: v}, nil
	})
}

// RSetWatches2 sends setWatches2 (xid -8) on raw session name with the
// connection's last zxid as relativeZxid (after RawResume: the zxid the
// dropped connection had seen) and the given script paths. Events it
// triggers are collected by a later RawEvents.
func RSetWatches2(name string, data, exist, child, persistent, recursive []string) Step {
	label := fmt.Sprintf("setWatches2 data=%q exist=%q child=%q persistent=%q recursive=%q", data, exist, child, persistent, recursive)
	return RawOn(name, label, func(ctx context.Context, rc *RawConn) (Result, error) {
		abs := func(ps []string) []string {
			out := make([]string, len(ps))
			for i, p := range ps {
				out[i] = AbsPath(ctx, p)
			}
			return out
		}
		req := &wire.SetWatches2{RelativeZxid: rc.LastZxid(), DataWatches: abs(data), ExistWatches: abs(exist),
			ChildWatches: abs(child), PersistentWatches: abs(persistent), PersistentRecursiveWatches: abs(recursive)}
		r, err := rc.CallXid(ctx, wire.XidSetWatches, wire.OpSetWatches2, req)
		if errors.Is(err, ErrRawClosed) {
			return Result{Err: "connection closed without reply"}, nil
		}
		if err != nil {
			return Result{}, err
		}
		return Result{Err: r.ErrName(), Values: []string{fmt.Sprintf("body=%x", r.Body)}}, nil
	})
}

func wireACL(acl []ACL) []wire.ACL {
	out := make([]wire.ACL, len(acl))
	for i, a := range acl {
		out[i] = wire.ACL{Perms: a.Perms, ID: wire.ID{Scheme: a.Scheme, ID: a.ID}}
	}
	return out
}

func deref(r *Result) Result {
	if r == nil {
		return Result{}
	}
	return *r
}

func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

var rawOpLabels = map[wire.OpCode]string{
	wire.OpCreate: "create", wire.OpCreate2: "create2", wire.OpCreateContainer: "createContainer",
	wire.OpCreateTTL: "createTTL", wire.OpGetData: "getData", wire.OpGetChildren: "getChildren",
	wire.OpMulti: "multi", wire.OpMultiRead: "multiRead", wire.OpError: "error", wire.OpSetData: "setData",
	wire.OpDelete: "delete", wire.OpCheck: "check", wire.OpExists: "exists", wire.OpGetACL: "getACL",
	wire.OpGetAllChildrenNumber: "getAllChildrenNumber",
}

func opLabel(op wire.OpCode) string {
	if s, ok := rawOpLabels[op]; ok {
		return s
	}
	return fmt.Sprintf("op%d", op)
}

package shard

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/internal/transcript"
	"github.com/corral/corral/wire"
)

// TestTranscripts runs the command transcripts in testdata/*.txt (in the style of etcd-io/raft's
// datadriven tests): each case is one or more input lines, a "----" line and the expected output
// up to a blank line. With -rewrite the files are regenerated from the actual output.
//
// Commands (PATH positional, options key=value, values may be Go-quoted):
//
//	reset [tag=N] [ownsroot=true|false] [extended=true|false]   fresh state
//	time MS | session ID | auth [ip:ADDR] [digest:USER:PW] [super] [raw:SCHEME:ID]
//	create PATH [data=S|null] [flags=N] [ttl=N] [op=create|create2|container|ttl] [acl=SPEC]
//	delete PATH [version=N] | set PATH [data=S] [version=N] | setacl PATH acl=SPEC [version=N]
//	check PATH [version=N] | deletecontainer PATH [version=N] | closesession ID
//	rawop code=N [body=HEX]
//	multi (then one sub-op per line: create/delete/set/check, as above)
//	stat PATH | get PATH | exists PATH | ls PATH | ls2 PATH | getacl PATH | count PATH
//	ephemerals SESSION [PREFIX] | expiry now=MS [max=N] | tree
//	seedcversion PATH to=N   (test only: overwrite a stored cversion)
//
// Cross-shard transactions (xtxn.txt). Several named states may live side by side; client
// writes go through proposer 1 and transaction ops through control proposer 2 of the current
// state:
//
//	shard NAME [tag=N] [ownsroot=true|false]   switch to the named state (created on first use)
//	prepare ID [anchor=N] [deadline=MS] [internal=true] [minzxid=N]
//	  (then one op per line: ROLE create/delete/set/check ..., ROLE one of none full node parent)
//	commit ID zxid=Z [time=MS] | abort ID | resolve ID   (Z: a number or z<counter>[.<tag>])
//	rawctl code=N [body=HEX]    a raw op in a control batch
//	prepared                    the view's prepared transaction
//
// ACL SPEC: comma-separated SCHEME:ID:PERMS (PERMS letters of "cdrwa" or a number; ID may contain
// ':'), or open, read, creator, null. "digestpw:USER:PW:PERMS" is the digest id of USER:PW.
// Zxids print as z<counter> (z<counter>.<tag> when the tag is not 0).
func TestTranscripts(t *testing.T) {
	transcript.RunDir(t, func(*testing.T) func([]string) []string { return newHarness().run })
}

// harness applies transcript commands to a State (the current one of several named states).
type harness struct {
	s       *State
	cur     *hshard
	shards  map[string]*hshard
	time    int64
	session int64
	auth    []wire.ID
}

// hshard is one named state with the sequence numbers of its two proposers.
type hshard struct {
	s           *State
	seq, ctlSeq uint64
}

func newHarness() *harness {
	h := &harness{}
	h.reset(StateConfig{OwnsRoot: true, ExtendedTypes: true, Root: "/"})
	return h
}

func (h *harness) reset(cfg StateConfig) {
	h.cur = &hshard{s: NewState(cfg)}
	h.shards = map[string]*hshard{"": h.cur}
	h.s = h.cur.s
	h.time, h.session, h.auth = 0, 0, nil
}

var statusNames = map[BatchStatus]string{BatchApplied: "applied", BatchDuplicate: "duplicate",
	BatchDuplicateUnknown: "duplicate-unknown", BatchOutOfOrder: "out-of-order", BatchBlocked: "blocked"}

// args is a parsed command line.
type args struct {
	cmd  string
	pos  []string
	opts map[string]string
}

func tokenize(line string) []string {
	var toks []string
	var b strings.Builder
	inQuote, esc, have := false, false, false
	for _, r := range line {
		switch {
		case esc:
			b.WriteRune(r)
			esc = false
		case inQuote && r == '\\':
			b.WriteRune(r)
			esc = true
		case r == '"':
			b.WriteRune(r)
			inQuote = !inQuote
			have = true
		case !inQuote && (r == ' ' || r == '\t'):
			if have {
				toks = append(toks, b.String())
				b.Reset()
				have = false
			}
		default:
			b.WriteRune(r)
			have = true
		}
	}
	if have {
		toks = append(toks, b.String())
	}
	return toks
}

func unquote(s string) string {
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

func parseArgs(line string) args {
	toks := tokenize(line)
	a := args{opts: map[string]string{}}
	if len(toks) == 0 {
		return a
	}
	a.cmd = toks[0]
	for _, tok := range toks[1:] {
		if k, v, ok := strings.Cut(tok, "="); ok && !strings.HasPrefix(tok, "/") && !strings.HasPrefix(tok, `"`) {
			a.opts[k] = unquote(v)
		} else {
			a.pos = append(a.pos, unquote(tok))
		}
	}
	return a
}

func (a args) path() string {
	if len(a.pos) == 0 {
		return ""
	}
	return a.pos[0]
}

func (a args) int(key string, def int64) int64 {
	v, ok := a.opts[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		panic(fmt.Sprintf("bad %s=%q", key, v))
	}
	return n
}

func (a args) data(key string) []byte {
	v, ok := a.opts[key]
	if !ok || v == "null" {
		return nil
	}
	return []byte(v)
}

func parsePerms(s string) int32 {
	if n, err := strconv.Atoi(s); err == nil {
		return int32(n)
	}
	var p int32
	for _, c := range s {
		switch c {
		case 'c':
			p |= wire.PermCreate
		case 'd':
			p |= wire.PermDelete
		case 'r':
			p |= wire.PermRead
		case 'w':
			p |= wire.PermWrite
		case 'a':
			p |= wire.PermAdmin
		}
	}
	return p
}

func parseACL(spec string) []wire.ACL {
	switch spec {
	case "", "open":
		return wire.OpenACLUnsafe
	case "read":
		return wire.ReadACLUnsafe
	case "creator":
		return wire.CreatorAllACL
	case "null":
		return nil
	}
	out := []wire.ACL{}
	for _, e := range strings.Split(spec, ",") {
		first := strings.Index(e, ":")
		last := strings.LastIndex(e, ":")
		if first < 0 || first == last {
			panic("bad acl entry " + e)
		}
		scheme, id, perms := e[:first], e[first+1:last], e[last+1:]
		if scheme == "digestpw" {
			scheme, id = "digest", acl.Digest(id)
		}
		out = append(out, wire.ACL{Perms: parsePerms(perms), ID: wire.ID{Scheme: scheme, ID: id}})
	}
	return out
}

var permLetters = "cdrwa"

func formatPerms(p int32) string {
	var b strings.Builder
	for i, bit := range []int32{wire.PermCreate, wire.PermDelete, wire.PermRead, wire.PermWrite, wire.PermAdmin} {
		if p&bit != 0 {
			b.WriteByte(permLetters[i])
		}
	}
	if rest := p &^ wire.PermAll; rest != 0 {
		fmt.Fprintf(&b, "+%d", rest)
	}
	return b.String()
}

func formatACL(acls []wire.ACL) string {
	if acls == nil {
		return "null"
	}
	parts := make([]string, len(acls))
	for i, a := range acls {
		parts[i] = fmt.Sprintf("%s:%s:%s", a.ID.Scheme, a.ID.ID, formatPerms(a.Perms))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func fz(z int64) string {
	if z == 0 {
		return "0"
	}
	if ZxidTag(z) == 0 {
		return fmt.Sprintf("z%d", ZxidCounter(z))
	}
	return fmt.Sprintf("z%d.%d", ZxidCounter(z), ZxidTag(z))
}

func formatStat(s wire.Stat) string {
	return fmt.Sprintf("czxid=%s mzxid=%s pzxid=%s ctime=%d mtime=%d version=%d cversion=%d aversion=%d owner=%#x len=%d children=%d",
		fz(s.Czxid), fz(s.Mzxid), fz(s.Pzxid), s.Ctime, s.Mtime, s.Version, s.Cversion, s.Aversion, uint64(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

func formatData(d []byte) string {
	if d == nil {
		return "null"
	}
	return strconv.Quote(string(d))
}

var eventNames = map[wire.EventType]string{
	wire.EventNodeCreated: "NodeCreated", wire.EventNodeDeleted: "NodeDeleted",
	wire.EventNodeDataChanged: "NodeDataChanged", wire.EventNodeChildrenChanged: "NodeChildrenChanged",
}

// subOp builds the op code and body of a write command.
func subOp(a args) (wire.OpCode, wire.Record) {
	switch a.cmd {
	case "create":
		code := wire.OpCreate
		switch a.opts["op"] {
		case "create2":
			code = wire.OpCreate2
		case "container":
			code = wire.OpCreateContainer
		case "ttl":
			code = wire.OpCreateTTL
		}
		acls := parseACL(a.opts["acl"])
		flags := int32(a.int("flags", 0))
		if code == wire.OpCreateTTL {
			return code, &wire.CreateTTLRequest{Path: a.path(), Data: a.data("data"), ACL: acls, Flags: flags, TTL: a.int("ttl", -1)}
		}
		return code, &wire.CreateRequest{Path: a.path(), Data: a.data("data"), ACL: acls, Flags: flags}
	case "delete":
		return wire.OpDelete, &wire.DeleteRequest{Path: a.path(), Version: int32(a.int("version", -1))}
	case "deletecontainer":
		return wire.OpDeleteContainer, &wire.DeleteRequest{Path: a.path(), Version: int32(a.int("version", -1))}
	case "set":
		return wire.OpSetData, &wire.SetDataRequest{Path: a.path(), Data: a.data("data"), Version: int32(a.int("version", -1))}
	case "setacl":
		return wire.OpSetACL, &wire.SetACLRequest{Path: a.path(), ACL: parseACL(a.opts["acl"]), Version: int32(a.int("version", -1))}
	case "check":
		return wire.OpCheck, &wire.CheckVersionRequest{Path: a.path(), Version: int32(a.int("version", -1))}
	}
	panic("unknown write command " + a.cmd)
}

func (h *harness) apply(op Op) []string {
	return h.applyBatch(op, false)
}

// applyBatch applies op alone in a batch of the client proposer (1) or, if control, of the
// control proposer (2).
func (h *harness) applyBatch(op Op, control bool) []string {
	seq, proposer := &h.cur.seq, uint64(1)
	if control {
		seq, proposer = &h.cur.ctlSeq, 2
	}
	*seq++
	op.Auth = h.auth
	if op.Session == 0 {
		op.Session = h.session
	}
	// Exercise the codec on the way: the batch goes through its encoding, as in the Raft log.
	b := Batch{Proposer: proposer, Seq: *seq, Time: h.time, Control: control, Ops: []Op{op}}
	dec, err := DecodeBatch(b.AppendTo(nil))
	if err != nil {
		panic(err)
	}
	res, events := h.s.Apply(&dec)
	if res.Status != BatchApplied || len(res.Results) != 1 {
		if res.Status == BatchBlocked {
			*seq-- // not consumed: the proposer proposes it again
		}
		return []string{"batch " + statusNames[res.Status]}
	}
	r := res.Results[0]
	out := []string{fmt.Sprintf("%s %s", fz(r.Zxid), r.Err.String())}
	out = append(out, formatBody(op.Code, r)...)
	for _, e := range events {
		l := fmt.Sprintf("event %s %s", eventNames[e.Type], e.Path)
		if e.Zxid != r.Zxid {
			l += " zxid=" + fz(e.Zxid)
		}
		if e.Session != 0 {
			l += fmt.Sprintf(" session=0x%x", e.Session)
		}
		out = append(out, l)
	}
	return out
}

func formatBody(code wire.OpCode, r OpResult) []string {
	if r.Body == nil {
		return nil
	}
	d := wire.NewDecoder(r.Body)
	switch code {
	case wire.OpCreate:
		var resp wire.CreateResponse
		resp.Decode(d)
		return []string{"path=" + resp.Path}
	case wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		var resp wire.Create2Response
		resp.Decode(d)
		return []string{"path=" + resp.Path, "  " + formatStat(resp.Stat)}
	case wire.OpSetData, wire.OpSetACL:
		var resp wire.SetDataResponse
		resp.Decode(d)
		return []string{"  " + formatStat(resp.Stat)}
	case wire.OpMulti:
		var resp wire.MultiResponse
		if err := resp.Decode(d); err != nil {
			return []string{"bad multi response: " + err.Error()}
		}
		var out []string
		for _, mr := range resp.Results {
			out = append(out, formatMultiResult(mr))
		}
		return out
	case OpTxnPrepare, OpTxnCommit, OpTxnAbort, OpTxnResolve:
		rep, err := DecodeTxnReply(r.Body)
		if err != nil {
			return []string{"bad txn reply: " + err.Error()}
		}
		return formatTxnReply(rep)
	}
	return []string{"body=" + hex.EncodeToString(r.Body)}
}

func formatMultiResult(mr wire.MultiResult) string {
	l := fmt.Sprintf("  result op=%d err=%s", mr.Op, mr.Err.String())
	switch mr.Op {
	case wire.OpCreate:
		l += " path=" + mr.Path
	case wire.OpCreate2:
		l += " path=" + mr.Path + " " + formatStat(mr.Stat)
	case wire.OpSetData:
		l += " " + formatStat(mr.Stat)
	}
	return l
}

var outcomeNames = map[TxnOutcome]string{TxnPrepared: "prepared", TxnFailed: "failed", TxnBusy: "busy",
	TxnCommitted: "committed", TxnAborted: "aborted"}

func formatTxnReply(rep TxnReply) []string {
	l := outcomeNames[rep.Outcome]
	switch rep.Outcome {
	case TxnPrepared:
		l += fmt.Sprintf(" floor=%d", rep.Floor)
	case TxnFailed:
		l += fmt.Sprintf(" index=%d err=%s", rep.FailIndex, rep.FailErr.String())
	case TxnCommitted:
		l += " zxid=" + fz(rep.Zxid)
	}
	out := []string{l}
	if rep.Results != nil {
		for i, mr := range rep.Results {
			if mr.Op == 0 {
				out = append(out, fmt.Sprintf("  result[%d] -", i))
				continue
			}
			out = append(out, fmt.Sprintf("  result[%d]", i)+strings.TrimPrefix(formatMultiResult(mr), "  result"))
		}
	}
	return out
}

// parseZxid parses a number or z<counter>[.<tag>].
func parseZxid(v string) int64 {
	if c, ok := strings.CutPrefix(v, "z"); ok {
		c, tag, _ := strings.Cut(c, ".")
		n, err1 := strconv.ParseInt(c, 10, 64)
		t, err2 := strconv.ParseInt("0"+tag, 10, 64)
		if err1 != nil || err2 != nil {
			panic("bad zxid " + v)
		}
		return n<<8 | t
	}
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		panic("bad zxid " + v)
	}
	return n
}

var roleNames = map[string]TxnRole{"none": RoleNone, "full": RoleFull, "node": RoleNode, "parent": RoleParent}

// buildMulti builds a multi from sub-op lines, each led by a role word if withRoles.
func buildMulti(lines []string, withRoles bool) (wire.MultiRequest, []TxnRole) {
	var m wire.MultiRequest
	var roles []TxnRole
	for _, l := range lines {
		if withRoles {
			word, rest, _ := strings.Cut(strings.TrimSpace(l), " ")
			role, ok := roleNames[word]
			if !ok {
				panic("unknown role " + word)
			}
			roles = append(roles, role)
			l = rest
		}
		sa := parseArgs(l)
		code, rec := subOp(sa)
		op := wire.MultiOp{Op: code}
		switch r := rec.(type) {
		case *wire.CreateRequest:
			op.Create = r
		case *wire.CreateTTLRequest:
			op.CreateTTL = r
		case *wire.DeleteRequest:
			op.Delete = r
		case *wire.SetDataRequest:
			op.SetData = r
		case *wire.CheckVersionRequest:
			op.Check = r
		}
		m.Ops = append(m.Ops, op)
	}
	return m, roles
}

func (h *harness) run(input []string) (out []string) {
	defer func() {
		if r := recover(); r != nil {
			out = []string{fmt.Sprintf("harness error: %v", r)}
		}
	}()
	a := parseArgs(input[0])
	v := h.s.View(0)
	read := func(code wire.OpCode, req wire.Record) (wire.Record, []string) {
		err, resp := v.Read(code, req, h.auth)
		if err != wire.ErrOK {
			return nil, []string{err.String()}
		}
		return resp, nil
	}
	switch a.cmd {
	case "reset":
		h.reset(StateConfig{Tag: uint8(a.int("tag", 0)), OwnsRoot: a.opts["ownsroot"] != "false",
			ExtendedTypes: a.opts["extended"] != "false", Root: "/"})
		return nil
	case "time":
		h.time, _ = strconv.ParseInt(a.path(), 0, 64)
		return nil
	case "session":
		h.session, _ = strconv.ParseInt(a.path(), 0, 64)
		return nil
	case "auth":
		h.auth = nil
		for _, p := range a.pos {
			scheme, rest, _ := strings.Cut(p, ":")
			switch scheme {
			case "digest":
				h.auth = append(h.auth, wire.ID{Scheme: "digest", ID: acl.Digest(rest)})
			case "super":
				h.auth = append(h.auth, wire.ID{Scheme: "super"})
			case "raw":
				s, id, _ := strings.Cut(rest, ":")
				h.auth = append(h.auth, wire.ID{Scheme: s, ID: id})
			default:
				h.auth = append(h.auth, wire.ID{Scheme: scheme, ID: rest})
			}
		}
		return nil
	case "create", "delete", "set", "setacl", "check", "deletecontainer":
		code, rec := subOp(a)
		return h.apply(Op{Code: code, Body: encode(rec), MinZxid: a.int("minzxid", 0)})
	case "seedcversion":
		// test-only: set a node's stored cversion directly (to reach the int32 limit)
		key, _ := keyOf(a.path())
		n := h.s.tree.get(key).clone()
		n.cversion = int32(a.int("to", 0))
		h.s.tree.put(n)
		return nil
	case "closesession":
		id, _ := strconv.ParseInt(a.path(), 0, 64)
		return h.apply(Op{Code: wire.OpCloseSession, Session: id})
	case "rawop":
		body, _ := hex.DecodeString(a.opts["body"])
		return h.apply(Op{Code: wire.OpCode(a.int("code", 0)), Body: body})
	case "multi":
		m, _ := buildMulti(input[1:], false)
		return h.apply(Op{Code: wire.OpMulti, Body: encode(&m)})
	case "shard":
		name := a.path()
		sh, ok := h.shards[name]
		if !ok {
			sh = &hshard{s: NewState(StateConfig{Tag: uint8(a.int("tag", 0)), OwnsRoot: a.opts["ownsroot"] != "false",
				ExtendedTypes: true, Root: "/"})}
			h.shards[name] = sh
		}
		h.cur, h.s = sh, sh.s
		return nil
	case "prepare":
		m, roles := buildMulti(input[1:], true)
		p := TxnPrepare{ID: uint64(a.int("id", 0)), Anchor: uint64(a.int("anchor", 0)), Deadline: a.int("deadline", 0),
			Internal: a.opts["internal"] == "true", Multi: m, Roles: roles}
		if id, err := strconv.ParseUint(a.path(), 0, 64); err == nil {
			p.ID = id
		}
		op := Op{Code: OpTxnPrepare, Body: p.AppendTo(nil)}
		if mz, ok := a.opts["minzxid"]; ok {
			op.MinZxid = parseZxid(mz)
		}
		return h.applyBatch(op, true)
	case "commit":
		id, _ := strconv.ParseUint(a.path(), 0, 64)
		c := TxnCommit{ID: id, Zxid: parseZxid(a.opts["zxid"]), Time: a.int("time", h.time)}
		return h.applyBatch(Op{Code: OpTxnCommit, Body: c.AppendTo(nil)}, true)
	case "abort":
		id, _ := strconv.ParseUint(a.path(), 0, 64)
		return h.applyBatch(Op{Code: OpTxnAbort, Body: (&TxnAbort{ID: id}).AppendTo(nil)}, true)
	case "resolve":
		id, _ := strconv.ParseUint(a.path(), 0, 64)
		return h.applyBatch(Op{Code: OpTxnResolve, Body: (&TxnResolve{ID: id}).AppendTo(nil)}, true)
	case "rawctl":
		body, _ := hex.DecodeString(a.opts["body"])
		return h.applyBatch(Op{Code: wire.OpCode(a.int("code", 0)), Body: body}, true)
	case "prepared":
		info, ok := v.Prepared()
		if !ok {
			return []string{"none"}
		}
		return []string{fmt.Sprintf("id=%d anchor=%d time=%d deadline=%d", info.ID, info.Anchor, info.PrepareTime, info.Deadline)}
	case "stat", "exists":
		resp, errOut := read(wire.OpExists, &wire.ExistsRequest{Path: a.path()})
		if errOut != nil {
			return errOut
		}
		return []string{formatStat(resp.(*wire.ExistsResponse).Stat)}
	case "get":
		resp, errOut := read(wire.OpGetData, &wire.GetDataRequest{Path: a.path()})
		if errOut != nil {
			return errOut
		}
		r := resp.(*wire.GetDataResponse)
		return []string{"data=" + formatData(r.Data), formatStat(r.Stat)}
	case "ls":
		resp, errOut := read(wire.OpGetChildren, &wire.GetChildrenRequest{Path: a.path()})
		if errOut != nil {
			return errOut
		}
		return []string{fmt.Sprintf("%q", resp.(*wire.GetChildrenResponse).Children)}
	case "ls2":
		resp, errOut := read(wire.OpGetChildren2, &wire.GetChildrenRequest{Path: a.path()})
		if errOut != nil {
			return errOut
		}
		r := resp.(*wire.GetChildren2Response)
		return []string{fmt.Sprintf("%q", r.Children), formatStat(r.Stat)}
	case "getacl":
		resp, errOut := read(wire.OpGetACL, &wire.GetACLRequest{Path: a.path()})
		if errOut != nil {
			return errOut
		}
		r := resp.(*wire.GetACLResponse)
		return []string{formatACL(r.ACL), formatStat(r.Stat)}
	case "count":
		resp, errOut := read(wire.OpGetAllChildrenNumber, &wire.GetAllChildrenNumberRequest{Path: a.path()})
		if errOut != nil {
			return errOut
		}
		return []string{strconv.Itoa(int(resp.(*wire.GetAllChildrenNumberResponse).TotalNumber))}
	case "ephemerals":
		id, _ := strconv.ParseInt(a.path(), 0, 64)
		prefix := ""
		if len(a.pos) > 1 {
			prefix = a.pos[1]
		}
		_, resp := v.GetEphemerals(id, &wire.GetEphemeralsRequest{PrefixPath: prefix})
		return []string{fmt.Sprintf("%q", resp.(*wire.GetEphemeralsResponse).Ephemerals)}
	case "expiry":
		return []string{fmt.Sprintf("%q", v.ExpiryCandidates(a.int("now", 0), int(a.int("max", 100))))}
	case "tree":
		v.Walk("/", func(path string, n NodeInfo) bool {
			out = append(out, fmt.Sprintf("%s data=%s acl=%s", path, formatData(n.Data()), formatACL(n.ACL())))
			out = append(out, "  "+formatStat(n.Stat()))
			return true
		})
		return out
	}
	return []string{"unknown command " + a.cmd}
}

package shard

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/corral/corral/wire"
)

// quotaState applies batches with a quota mode to one state, one proposer.
type quotaState struct {
	t   *testing.T
	s   *State
	seq uint64
}

func newQuotaState(t *testing.T) *quotaState {
	return &quotaState{t: t, s: NewState(StateConfig{Tag: 1, OwnsRoot: true})}
}

// apply applies ops in one batch of mode q and returns each op's error.
func (qs *quotaState) apply(q QuotaMode, ops ...Op) []wire.Err {
	qs.t.Helper()
	qs.seq++
	b := batch(7, qs.seq, 1_700_000_000_000+int64(qs.seq), ops...)
	b.Quota = q
	// Through the codec, as a replica sees it.
	dec, err := DecodeBatch(b.AppendTo(nil))
	if err != nil {
		qs.t.Fatal(err)
	}
	res, _ := qs.s.Apply(&dec)
	if res.Status != BatchApplied {
		qs.t.Fatalf("batch %d: status %v", qs.seq, res.Status)
	}
	errs := make([]wire.Err, len(res.Results))
	for i, r := range res.Results {
		errs[i] = r.Err
	}
	return errs
}

func (qs *quotaState) must(q QuotaMode, ops ...Op) {
	qs.t.Helper()
	for i, err := range qs.apply(q, ops...) {
		if err != wire.ErrOK {
			qs.t.Fatalf("batch %d op %d: %v", qs.seq, i, err)
		}
	}
}

func (qs *quotaState) data(path string) string {
	qs.t.Helper()
	n, ok := qs.s.View(1).Get(path)
	if !ok {
		qs.t.Fatalf("%s: no node", path)
	}
	return string(n.Data())
}

// setQuota does what zkCli's setquota does for a new quota: the quota path's nodes, the limits,
// then stats "count=0,bytes=0" (which the shard counts afresh).
func (qs *quotaState) setQuota(q QuotaMode, path, limits string) {
	qs.t.Helper()
	p := QuotaRoot
	for _, c := range strings.Split(path[1:], "/") {
		p += "/" + c
		if _, ok := qs.s.View(1).Get(p); !ok {
			qs.must(q, opCreate(p, nil, 0))
		}
	}
	qs.must(q, opCreate(p+"/"+QuotaLimitNode, []byte(limits), 0), opCreate(p+"/"+QuotaStatNode, []byte("count=0,bytes=0"), 0))
}

func TestQuotaStatsFollowWrites(t *testing.T) {
	qs := newQuotaState(t)
	qs.must(QuotaCount, opCreate("/app", []byte("ab"), 0), opCreate("/app/x", []byte("xyz"), 0))
	qs.setQuota(QuotaCount, "/app", "count=10,bytes=-1")
	stats := QuotaRoot + "/app/" + QuotaStatNode
	// The quota'd node itself counts: 2 nodes, 5 bytes.
	if got := qs.data(stats); got != "count=2,bytes=5" {
		t.Fatalf("stats after setquota = %q", got)
	}
	n, _ := qs.s.View(1).Get(stats)
	before := n.Stat()

	qs.must(QuotaCount, opCreate("/app/y", []byte("1234"), 0))
	qs.must(QuotaCount, opSet("/app/x", []byte("x"), -1))
	qs.must(QuotaCount, opCreate("/app/y/z", nil, 0))
	qs.must(QuotaCount, opDelete("/app/y/z", -1))
	if got := qs.data(stats); got != "count=3,bytes=7" {
		t.Fatalf("stats = %q, want count=3,bytes=7", got)
	}
	// In place: version, mzxid and mtime stay; the length follows the data.
	n, _ = qs.s.View(1).Get(stats)
	after := n.Stat()
	if after.Version != before.Version || after.Mzxid != before.Mzxid || after.Mtime != before.Mtime ||
		after.DataLength != int32(len("count=3,bytes=7")) {
		t.Fatalf("stats node stat changed: %+v -> %+v", before, after)
	}

	// A multi counts every op; a failed multi counts nothing.
	qs.must(QuotaCount, Op{Code: wire.OpMulti, Body: encode(&wire.MultiRequest{Ops: []wire.MultiOp{
		{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: "/app/m1", Data: []byte("1"), ACL: wire.OpenACLUnsafe}},
		{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: "/app/m2", Data: []byte("22"), ACL: wire.OpenACLUnsafe}},
	}})})
	if errs := qs.apply(QuotaCount, Op{Code: wire.OpMulti, Body: encode(&wire.MultiRequest{Ops: []wire.MultiOp{
		{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: "/app/m3", Data: []byte("1"), ACL: wire.OpenACLUnsafe}},
		{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: "/app/m1", ACL: wire.OpenACLUnsafe}},
	}})}); errs[0] != wire.ErrOK {
		t.Fatalf("multi: %v", errs)
	}
	if got := qs.data(stats); got != "count=5,bytes=10" {
		t.Fatalf("stats after multis = %q, want count=5,bytes=10", got)
	}

	// Ephemerals count, and their session's close uncounts them.
	qs.must(QuotaCount, Op{Session: 0x55, Code: wire.OpCreate, Body: encode(&wire.CreateRequest{Path: "/app/e", Data: []byte("eee"), ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral})})
	if got := qs.data(stats); got != "count=6,bytes=13" {
		t.Fatalf("stats with an ephemeral = %q", got)
	}
	qs.must(QuotaCount, Op{Session: 0x55, Code: wire.OpCloseSession})
	if got := qs.data(stats); got != "count=5,bytes=10" {
		t.Fatalf("stats after closeSession = %q", got)
	}

	// A nested quota takes over its subtree (the longest prefix wins).
	qs.setQuota(QuotaCount, "/app/x", "count=-1,bytes=100")
	inner := QuotaRoot + "/app/x/" + QuotaStatNode
	if got := qs.data(inner); got != "count=1,bytes=1" {
		t.Fatalf("inner stats = %q", got)
	}
	qs.must(QuotaCount, opCreate("/app/x/k", []byte("kk"), 0))
	if got, outer := qs.data(inner), qs.data(stats); got != "count=2,bytes=3" || outer != "count=5,bytes=10" {
		t.Fatalf("inner %q, outer %q", got, outer)
	}

	// Batches from before the level count nothing.
	qs.must(QuotaOff, opCreate("/app/off", []byte("zz"), 0))
	if got := qs.data(stats); got != "count=5,bytes=10" {
		t.Fatalf("a QuotaOff batch counted: %q", got)
	}

	// Deleting the limits node ends the quota: later writes leave the stats alone.
	qs.must(QuotaCount, opDelete(QuotaRoot+"/app/x/"+QuotaLimitNode, -1))
	qs.must(QuotaCount, opCreate("/app/x/k2", nil, 0))
	if got, outer := qs.data(inner), qs.data(stats); got != "count=2,bytes=3" || outer != "count=6,bytes=10" {
		t.Fatalf("after delquota: inner %q, outer %q", got, outer)
	}
}

func TestQuotaEnforce(t *testing.T) {
	qs := newQuotaState(t)
	qs.must(QuotaEnforce, opCreate("/h", nil, 0))
	qs.setQuota(QuotaEnforce, "/h", "count=-1,bytes=-1=;byteHardLimit=10;countHardLimit=3")
	qs.must(QuotaEnforce, opCreate("/h/a", []byte("12345"), 0), opCreate("/h/b", nil, 0))
	qs.s.TakeQuotaMessages()
	// A fourth node passes the hard count limit; nothing changes.
	if errs := qs.apply(QuotaEnforce, opCreate("/h/c", nil, 0)); errs[0] != wire.ErrQuotaExceeded {
		t.Fatalf("create past countHardLimit: %v", errs)
	}
	if msgs := qs.s.TakeQuotaMessages(); len(msgs) != 1 || msgs[0] != "Quota exceeded: /h [current count=4, hardCountLimit=3]" {
		t.Fatalf("messages %q", msgs)
	}
	if _, ok := qs.s.View(1).Get("/h/c"); ok {
		t.Fatal("the refused create happened")
	}
	// Bytes: 5 now; 6 more pass the 10-byte hard limit, before BADVERSION is looked at.
	if errs := qs.apply(QuotaEnforce, opSet("/h/b", []byte("123456"), 7)); errs[0] != wire.ErrQuotaExceeded {
		t.Fatalf("setData past byteHardLimit: %v", errs)
	}
	qs.must(QuotaEnforce, opSet("/h/b", []byte("12345"), -1))
	// Shrinking is never refused; without enforcement the limit does not hold.
	qs.must(QuotaEnforce, opSet("/h/a", nil, -1))
	qs.must(QuotaCount, opCreate("/h/c", nil, 0))
	if got := qs.data(QuotaRoot + "/h/" + QuotaStatNode); got != "count=4,bytes=5" {
		t.Fatalf("stats %q", got)
	}
	// In a multi the refused op fails the whole multi at its index.
	errs := qs.apply(QuotaEnforce, Op{Code: wire.OpMulti, Body: encode(&wire.MultiRequest{Ops: []wire.MultiOp{
		{Op: wire.OpDelete, Delete: &wire.DeleteRequest{Path: "/h/c", Version: -1}},
		{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: "/h/d", ACL: wire.OpenACLUnsafe}},
		{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: "/h/e", ACL: wire.OpenACLUnsafe}},
	}})})
	if errs[0] != wire.ErrOK {
		t.Fatalf("multi: %v", errs)
	}
	if _, ok := qs.s.View(1).Get("/h/e"); ok {
		t.Fatal("a multi past the hard limit applied")
	}

	// A soft limit only logs.
	qs.must(QuotaEnforce, opCreate("/s", nil, 0))
	qs.setQuota(QuotaEnforce, "/s", "count=1,bytes=-1")
	qs.s.TakeQuotaMessages()
	qs.must(QuotaEnforce, opCreate("/s/a", nil, 0))
	if msgs := qs.s.TakeQuotaMessages(); len(msgs) != 1 || msgs[0] != "Quota exceeded: /s [current count=2, softCountLimit=1]" {
		t.Fatalf("soft limit messages %q", msgs)
	}
}

func TestQuotaTrackText(t *testing.T) {
	for in, want := range map[string]string{
		"count=1,bytes=2": "count=1,bytes=2",
		"bytes=2":         "count=-1,bytes=2",
		"count=-1,bytes=-1=;byteHardLimit=5;countHardLimit=3": "count=-1,bytes=-1=;byteHardLimit=5;countHardLimit=3",
		"count=,bytes=7":    "",
		"":                  "count=-1,bytes=-1",
		",count=1":          "",
		"count=x":           "",
		"count=1;;bytes=3,": "count=1,bytes=3",
	} {
		tr, ok := parseQuotaTrack([]byte(in))
		got := ""
		if ok {
			got = string(tr.bytes())
		}
		if in == "count=,bytes=7" {
			want = "" // "count=" has no value after String.split: ZooKeeper throws
		}
		if got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
	}
}

// TestQuotaInvariant: after random writes the stats node says what counting the subtree says.
func TestQuotaInvariant(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	qs := newQuotaState(t)
	qs.must(QuotaCount, opCreate("/q", []byte("root"), 0))
	qs.setQuota(QuotaCount, "/q", "count=-1,bytes=-1")
	paths := []string{"/q/a", "/q/b", "/q/a/c", "/q/a/d", "/q/b/e", "/other"}
	for i := 0; i < 2000; i++ {
		p := paths[r.Intn(len(paths))]
		var op Op
		switch r.Intn(3) {
		case 0:
			op = opCreate(p, []byte(strings.Repeat("x", r.Intn(5))), 0)
		case 1:
			op = opDelete(p, -1)
		default:
			op = opSet(p, []byte(strings.Repeat("y", r.Intn(7))), -1)
		}
		qs.apply(QuotaCount, op)
	}
	var count, bytes int64
	qs.s.View(1).Walk("/q", func(_ string, n NodeInfo) bool {
		count++
		bytes += int64(len(n.Data()))
		return true
	})
	if got, want := qs.data(QuotaRoot+"/q/"+QuotaStatNode), fmt.Sprintf("count=%d,bytes=%d", count, bytes); got != want {
		t.Fatalf("stats %q, subtree %q", got, want)
	}
}

func TestQuotaPrepareCodec(t *testing.T) {
	for _, p := range []TxnPrepare{
		{ID: 1, Anchor: 2, Quota: QuotaCount, Roles: []TxnRole{}},
		{ID: 1, Anchor: 2, Quota: QuotaEnforce, Group: true, Parts: []uint64{2, 3}, Roles: []TxnRole{}},
		{ID: 1, Anchor: 2, Roles: []TxnRole{}},
	} {
		got, err := DecodeTxnPrepare(p.AppendTo(nil))
		if err != nil || got.Quota != p.Quota || got.Group != p.Group {
			t.Fatalf("%+v -> %+v, %v", p, got, err)
		}
	}
	b := batch(1, 1, 5)
	for _, q := range []QuotaMode{QuotaOff, QuotaCount, QuotaEnforce} {
		b.Quota = q
		got, err := DecodeBatch(b.AppendTo(nil))
		if err != nil || got.Quota != q {
			t.Fatalf("batch quota %v -> %v, %v", q, got.Quota, err)
		}
	}
}

// TestQuotaPreparedLocks: a transaction prepared with quotas on holds back a counted write
// below a quota'd prefix of its paths (it would change the stats the prepare was checked
// against) and a write of that prefix's limits, but not a write below a prefix without a quota,
// nor a batch that counts nothing; after the commit the stats hold both.
func TestQuotaPreparedLocks(t *testing.T) {
	qs := newQuotaState(t)
	qs.must(QuotaEnforce, opCreate("/app", nil, 0), opCreate("/free", nil, 0))
	qs.setQuota(QuotaEnforce, "/app", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3")
	p := TxnPrepare{ID: 5, Anchor: 1, Deadline: 9_999, Quota: QuotaEnforce,
		Multi: multiOf(mCreate("/app/t", []byte("v"), 0)), Roles: []TxnRole{RoleNode}}
	rep, _, _ := txnReply(t, qs.s, ctl(1, 1_700_000_000_100, prepareOp(p)))
	if rep.Outcome != TxnPrepared {
		t.Fatalf("prepare: %+v", rep)
	}
	apply := func(seq uint64, q QuotaMode, op Op) BatchStatus {
		b := batch(8, seq, 1_700_000_000_100, op)
		b.Quota = q
		res, _ := qs.s.Apply(b)
		return res.Status
	}
	if st := apply(1, QuotaEnforce, opCreate("/app/other", nil, 0)); st != BatchBlocked {
		t.Fatalf("a counted create below the quota while prepared: %v", st)
	}
	if st := apply(1, QuotaEnforce, opSet(QuotaRoot+"/app/"+QuotaLimitNode, []byte("count=1"), -1)); st != BatchBlocked {
		t.Fatalf("a write of the limits while prepared: %v", st)
	}
	if st := apply(1, QuotaEnforce, opCreate("/free/x", nil, 0)); st != BatchApplied {
		t.Fatalf("a create without a quota while prepared: %v", st)
	}
	if rep, _, _ := txnReply(t, qs.s, ctl(2, 1_700_000_000_101, commitOp(5, rep.Floor<<8|1, 1_700_000_000_200))); rep.Outcome != TxnCommitted {
		t.Fatalf("commit: %+v", rep)
	}
	if st := apply(2, QuotaEnforce, opCreate("/app/other", nil, 0)); st != BatchApplied {
		t.Fatalf("after the commit: %v", st)
	}
	if got := qs.data(QuotaRoot + "/app/" + QuotaStatNode); got != "count=3,bytes=1" {
		t.Fatalf("stats %q", got)
	}
	// Now at the hard limit: a prepare past it fails.
	p.ID, p.Multi = 6, multiOf(mCreate("/app/u", nil, 0))
	if rep, _, _ := txnReply(t, qs.s, ctl(3, 1_700_000_000_300, prepareOp(p))); rep.Outcome != TxnFailed || rep.FailErr != wire.ErrQuotaExceeded {
		t.Fatalf("prepare past the hard limit: %+v", rep)
	}
}

// FuzzQuotaTrack: the StatsTrack parser, which apply runs on data any client can write into a
// limits or stats node, never panics, and what it writes back parses to the same values.
func FuzzQuotaTrack(f *testing.F) {
	for _, s := range []string{"count=1,bytes=2", "count=-1,bytes=-1=;byteHardLimit=5;countHardLimit=3", ",;=", "a==5", "count=99999999999999999999"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, ok := parseQuotaTrack(data)
		if !ok {
			return
		}
		again, ok := parseQuotaTrack(tr.bytes())
		if !ok || again.get("count") != tr.get("count") || again.get("bytes") != tr.get("bytes") {
			t.Fatalf("%q -> %q -> %v, %v", data, tr.bytes(), again, ok)
		}
	})
}

// TestQuotaLockKeysAsNodeKeys: quotaLockKeys gives, for any path (malformed ones included: a
// lock set must be the same on every replica and every version), exactly the keys of
// /zookeeper/quota<prefix>/<name> as keyOf maps them, for every prefix quotaPrefixes gives, in
// the same order; quotaNodeKey gives the same keys.
func TestQuotaLockKeysAsNodeKeys(t *testing.T) {
	paths := []string{"", "/", "//", "/a", "/a/b", "/a/b/c", "/a/", "a/b", "/a\x01b/c", "/a/b\x01", "/\x01",
		"/zookeeper/quota/x", "/a//b", "/" + strings.Repeat("x/", 20) + "y", "/é/ü"}
	r := rand.New(rand.NewSource(3))
	alphabet := []byte{'/', 'a', 'b', '\x01', '\x02', 0}
	for i := 0; i < 2000; i++ {
		b := make([]byte, r.Intn(10))
		for j := range b {
			b[j] = alphabet[r.Intn(len(alphabet))]
		}
		if r.Intn(2) == 0 {
			b = append([]byte{'/'}, b...)
		}
		paths = append(paths, string(b))
	}
	for _, path := range paths {
		var want, got []string
		quotaPrefixes(path, func(p string) bool {
			for _, name := range []string{QuotaLimitNode, QuotaStatNode} {
				k, ok := keyOf(QuotaRoot + p + "/" + name)
				if nk, nok := quotaNodeKey(p, name); nk != k || nok != ok {
					t.Fatalf("quotaNodeKey(%q, %q) = %q, %v; keyOf gives %q, %v", p, name, nk, nok, k, ok)
				}
				if ok {
					want = append(want, k)
				}
			}
			return true
		})
		quotaLockKeys(path, func(k string) { got = append(got, k) })
		if !slices.Equal(got, want) {
			t.Fatalf("path %q: keys %q, want %q", path, got, want)
		}
	}
}

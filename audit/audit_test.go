package audit

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral/corral/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var cl = Client{Session: 0x100000a2b3c0001, User: "127.0.0.1", IP: "127.0.0.1"}

// The expected lines are Apache ZooKeeper 3.8.0's (tests/audit has them from a real server);
// fields are separated by tabs.
func TestWrite(t *testing.T) {
	world := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	tests := []struct {
		op      wire.OpCode
		rec     wire.Record
		errc    wire.Err
		created string
		want    string // "" = not audited
	}{
		0: {wire.OpCreate, &wire.CreateRequest{Path: "/a/s-", Flags: wire.FlagEphemeralSequential}, wire.ErrOK, "/a/s-0000000000",
			"session=0x100000a2b3c0001\tuser=127.0.0.1\tip=127.0.0.1\toperation=create\tznode=/a/s-0000000000\tznode_type=ephemeral_sequential\tresult=success"},
		1: {wire.OpCreate2, &wire.CreateRequest{Path: "/a/s-", Flags: wire.FlagPersistentSequential}, wire.ErrNoNode, "",
			"session=0x100000a2b3c0001\tuser=127.0.0.1\tip=127.0.0.1\toperation=create\tznode=/a/s-\tznode_type=persistent_sequential\tresult=failure"},
		2: {wire.OpCreateContainer, &wire.CreateRequest{Path: "/c", Flags: wire.FlagContainer}, wire.ErrOK, "/c",
			"session=0x100000a2b3c0001\tuser=127.0.0.1\tip=127.0.0.1\toperation=create\tznode=/c\tznode_type=container\tresult=success"},
		3: {wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/t", Flags: wire.FlagPersistentWithTTL, TTL: 5}, wire.ErrOK, "/t", ""},
		4: {wire.OpDelete, &wire.DeleteRequest{Path: "/a"}, wire.ErrNotEmpty, "",
			"session=0x100000a2b3c0001\tuser=127.0.0.1\tip=127.0.0.1\toperation=delete\tznode=/a\tresult=failure"},
		5: {wire.OpSetData, &wire.SetDataRequest{Path: "/a"}, wire.ErrOK, "",
			"session=0x100000a2b3c0001\tuser=127.0.0.1\tip=127.0.0.1\toperation=setData\tznode=/a\tresult=success"},
		6: {wire.OpSetACL, &wire.SetACLRequest{Path: "/a", ACL: append(world, wire.ACL{Perms: wire.PermRead | wire.PermAdmin, ID: wire.ID{Scheme: "digest", ID: "bob:x="}})}, wire.ErrOK, "",
			"session=0x100000a2b3c0001\tuser=127.0.0.1\tip=127.0.0.1\toperation=setAcl\tznode=/a\tacl=world:anyone:cdrwadigest:bob:x=:ra\tresult=success"},
		7: {wire.OpCheck, &wire.CheckVersionRequest{Path: "/a"}, wire.ErrOK, "", ""},
	}
	for i, tt := range tests {
		e, ok := Write(cl, tt.op, tt.rec, tt.errc, tt.created)
		got := ""
		if ok {
			got = e.Message()
		}
		if got != tt.want {
			t.Errorf("%d: got\n %q\nwant\n %q", i, got, tt.want)
		}
	}
}

func TestMulti(t *testing.T) {
	m := &wire.MultiRequest{Ops: []wire.MultiOp{
		{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: "/m"}},
		{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: "/m/q-", Flags: wire.FlagPersistentSequential}},
		{Op: wire.OpCreateTTL, CreateTTL: &wire.CreateTTLRequest{Path: "/m/t", Flags: wire.FlagPersistentWithTTL, TTL: 9}},
		{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: "/m"}},
		{Op: wire.OpCheck, Check: &wire.CheckVersionRequest{Path: "/m"}},
		{Op: wire.OpDelete, Delete: &wire.DeleteRequest{Path: "/m/t"}},
	}}
	ok := []wire.MultiResult{{Op: wire.OpCreate, Path: "/m"}, {Op: wire.OpCreate, Path: "/m/q-0000000000"},
		{Op: wire.OpCreateTTL, Path: "/m/t"}, {Op: wire.OpSetData}, {Op: wire.OpCheck}, {Op: wire.OpDelete}}
	var got []string
	for _, e := range Multi(cl, m, wire.ErrOK, ok) {
		got = append(got, e.Message())
	}
	p := "session=0x100000a2b3c0001\tuser=127.0.0.1\tip=127.0.0.1\t"
	want := []string{
		p + "operation=create\tznode=/m\tznode_type=persistent\tresult=success",
		p + "operation=create\tznode=/m/q-0000000000\tresult=success", // mode looked up by the created path
		p + "operation=create\tznode=/m/t\tresult=success",            // TTL creates are not in the mode map
		p + "operation=setData\tznode=/m\tresult=success",
		p + "operation=delete\tznode=/m/t\tresult=success",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("successful multi:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	failedLine := p + "operation=multiOperation\tresult=failure"
	failed := []wire.MultiResult{{Op: wire.OpError, Err: wire.ErrOK}, {Op: wire.OpError, Err: wire.ErrNoNode}}
	for i, tc := range []struct {
		errc wire.Err
		res  []wire.MultiResult
	}{{wire.ErrOK, failed}, {wire.ErrNoNode, failed}, {wire.ErrSessionMoved, nil}} {
		es := Multi(cl, m, tc.errc, tc.res)
		if len(es) != 1 || es[0].Message() != failedLine || es[0].Result != Failure {
			t.Errorf("failed multi %d: %+v", i, es)
		}
	}
	if es := Multi(cl, &wire.MultiRequest{}, wire.ErrOK, nil); len(es) != 0 {
		t.Errorf("empty multi: %+v", es)
	}
}

func TestUsersAndFields(t *testing.T) {
	ids := []wire.ID{{Scheme: "digest", ID: "bob:hash="}, {Scheme: "ip", ID: "10.0.0.1"}, {Scheme: "super", ID: ""},
		{Scheme: "sasl", ID: "alice"}, {Scheme: "x509", ID: "CN=c"}, {Scheme: "digest", ID: " :x"}}
	if got, want := Users(ids), "bob,10.0.0.1,alice,CN=c"; got != want {
		t.Errorf("Users = %q, want %q", got, want)
	}
	if got, want := Users([]wire.ID{{Scheme: "ip", ID: "::1"}, {Scheme: "ip", ID: "fe80::a:bc%eth0"}}), "0:0:0:0:0:0:0:1,fe80:0:0:0:0:0:a:bc%eth0"; got != want {
		t.Errorf("Users(IPv6) = %q, want %q", got, want)
	}
	for in, want := range map[string]string{"10.1.2.3": "10.1.2.3", "::ffff:10.1.2.3": "10.1.2.3",
		"2001:db8::1": "2001:db8:0:0:0:0:0:1", "not an ip": "not an ip"} {
		if got := HostAddress(in); got != want {
			t.Errorf("HostAddress(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Users(nil); got != "" {
		t.Errorf("Users(nil) = %q", got)
	}
	if got, want := SessionHex(-1), "0xffffffffffffffff"; got != want {
		t.Errorf("SessionHex(-1) = %q, want %q", got, want)
	}
	if got := PermString(wire.PermAll); got != "cdrwa" {
		t.Errorf("PermString(all) = %q", got)
	}
	// No user (no identity with a provider): the field is left out.
	e := Event{Session: 1, HasSession: true, IP: "::1", Operation: OpDelete, Znode: "/a", Result: Success}
	if got, want := e.Message(), "session=0x1\tip=::1\toperation=delete\tznode=/a\tresult=success"; got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	ts := time.Date(2026, 11, 25, 21, 0, 1, 234e6, time.Local)
	e.Result = Failure
	if got, want := e.Line(ts), "2026-11-25 21:00:01,234 ERROR audit.Slf4jAuditLogger: session=0x1\tip=::1\toperation=delete\tznode=/a\tresult=failure\n"; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
	start := Event{User: "zookeeper", Operation: OpServerStart, Result: Success}
	if got, want := start.Message(), "user=zookeeper\toperation=serverStart\tresult=success"; got != want {
		t.Errorf("serverStart = %q, want %q", got, want)
	}
}

// TestLog: every line written before Close is in the file, whole, between serverStart and
// serverStop, and the file is appended to across opens.
func TestLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zookeeper_audit.log")
	for round := 0; round < 2; round++ {
		l, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 250; i++ {
					l.Write(Event{Session: int64(g), HasSession: true, Operation: OpCreate, Znode: "/n", Result: Success})
				}
			}()
		}
		wg.Wait()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != ErrClosed {
			t.Errorf("second Close: %v", err)
		}
		l.Write(Event{Operation: OpCreate}) // dropped
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2*1002 {
		t.Fatalf("%d lines, want %d", len(lines), 2*1002)
	}
	for r := 0; r < 2; r++ {
		first, last := lines[r*1002], lines[r*1002+1001]
		if !strings.HasSuffix(first, "\toperation=serverStart\tresult=success") || !strings.HasSuffix(last, "\toperation=serverStop\tresult=invoked") {
			t.Errorf("round %d: first %q, last %q", r, first, last)
		}
		for _, l := range lines[r*1002+1 : r*1002+1001] {
			if !strings.Contains(l, " INFO audit.Slf4jAuditLogger: session=0x") || !strings.HasSuffix(l, "\toperation=create\tznode=/n\tresult=success") {
				t.Fatalf("round %d: bad line %q", r, l)
			}
		}
	}
}

func TestReconfig(t *testing.T) {
	e := Reconfig(cl)
	if got, want := e.Line(time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.Local)), "2026-01-02 03:04:05,006 ERROR audit.Slf4jAuditLogger: session=0x100000a2b3c0001\tuser=127.0.0.1\tip=127.0.0.1\toperation=reconfig\tresult=failure\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestEphemeralDeleted(t *testing.T) {
	e := EphemeralDeleted("zookeeper", 0x100000a2b3c0001, "/app/lock-0000000003")
	if got, want := e.Line(time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.Local)), "2026-01-02 03:04:05,006 INFO audit.Slf4jAuditLogger: session=0x100000a2b3c0001\tuser=zookeeper\toperation=ephemeralZNodeDeletionOnSessionCloseOrExpire\tznode=/app/lock-0000000003\tresult=success\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

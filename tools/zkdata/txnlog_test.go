package zkdata

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/corral/corral/wire"
)

// sessionsLog is a log of n createSession transactions from zxid 1.
func sessionsLog(n int) *logWriter {
	l := newLogWriter()
	for i := 1; i <= n; i++ {
		l.add(hdr(int64(i), int64(0x100+i)), &txn{typ: wire.OpCreateSession, timeout: 1000}, nil)
	}
	return l
}

// TestLogEnds: the ways a log may end that ZooKeeper accepts, and where Open says it stopped.
func TestLogEnds(t *testing.T) {
	l := sessionsLog(3)
	full := l.e.Bytes()
	last := l.offs[2]
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	zeros := func(n int) []byte { return make([]byte, n) }
	cases := []struct {
		name    string
		log     []byte
		zxid    int64
		stop    string
		end     int64
		nonZero int64
	}{
		{"end of file", full, 3, "end of file", int64(len(full)), -1},
		{"preallocated zeros", cat(full, zeros(4096)), 3, "zero-filled tail", int64(len(full)), -1},
		{"zeros then bytes", cat(full, zeros(100), []byte{7}, zeros(10)), 3, "zero-filled tail", int64(len(full)), int64(len(full)) + 100},
		{"cut in the checksum", full[:last+5], 2, "entry cut short", last, -1},
		{"cut in the entry", full[:last+20], 2, "cut short", last, -1},
		{"cut in the entry, zeros after", cat(full[:last+20], zeros(int(len(full))-int(last)-20+1000)), 2, "not followed by 'B'", last, -1},
		{"no end byte", full[:len(full)-1], 2, "without its end byte", last, -1},
		{"null length", cat(full, zeros(8), []byte{0xff, 0xff, 0xff, 0xff}, zeros(10)), 3, "null entry", int64(len(full)), -1},
		{"no header", full[:10], 0, "no file header", 0, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, map[string][]byte{"snapshot.0": encodeSnapshot(baseTree(), 0), "log.1": c.log})
			tree, err := Open(dir, "")
			if err != nil {
				t.Fatal(err)
			}
			lf := tree.Report().Logs[0]
			if tree.Zxid() != c.zxid || !strings.Contains(lf.Stop, c.stop) || lf.End != c.end || lf.NonZeroAfter != c.nonZero {
				t.Errorf("zxid %d, stopped at %d (%s), non-zero at %d; want %d, %d (%s), %d",
					tree.Zxid(), lf.End, lf.Stop, lf.NonZeroAfter, c.zxid, c.end, c.stop, c.nonZero)
			}
			if (c.nonZero >= 0) != (len(tree.Report().Warnings) > 0) {
				t.Errorf("warnings %q", tree.Report().Warnings)
			}
		})
	}

	// A log that ends early is not the end of the replay: the next one goes on.
	l2 := newLogWriter()
	l2.add(hdr(3, 0x103), &txn{typ: wire.OpCreateSession, timeout: 1000}, nil)
	dir := writeDir(t, map[string][]byte{"snapshot.0": encodeSnapshot(baseTree(), 0),
		"log.1": cat(full[:last], zeros(100)), "log.3": l2.e.Bytes()})
	tree, err := Open(dir, "")
	if err != nil || tree.Zxid() != 3 || len(tree.Sessions()) != 3 || len(tree.Report().Logs) != 2 {
		t.Fatalf("two logs: %v", err)
	}
}

// TestLogErrors: what ZooKeeper refuses is an error naming the file and the entry's offset.
func TestLogErrors(t *testing.T) {
	l := sessionsLog(3)
	mid := l.offs[1]
	corrupt := func(f func(b []byte)) []byte {
		b := bytes.Clone(l.e.Bytes())
		f(b)
		return b
	}
	bad := newLogWriter()
	bad.add(hdr(1, 1), &txn{typ: wire.OpCreateSession, timeout: 1000}, nil)
	bad.raw([]byte{1, 2, 3})
	cases := []struct {
		name string
		log  []byte
		off  int64
		want string
	}{
		{"magic", corrupt(func(b []byte) { b[0] = 'X' }), 0, "magic number"},
		{"checksum", corrupt(func(b []byte) { b[mid+12+3] ^= 1 }), mid, "fails its checksum"},
		{"length", corrupt(func(b []byte) { copy(b[mid+8:], []byte{0xff, 0xff, 0xff, 0xf0}) }), mid, "found -16"},
		{"short record", bad.e.Bytes(), bad.offs[1], "TxnHeader"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, map[string][]byte{"snapshot.0": encodeSnapshot(baseTree(), 0), "log.1": c.log})
			_, err := Open(dir, "")
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.HasSuffix(fe.File, "log.1") || fe.Offset != c.off || !strings.Contains(fe.What, c.want) {
				t.Fatalf("got %v, want %q at offset %d", err, c.want, c.off)
			}
		})
	}
}

package backupfile

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/corral/corral/wire"
)

func sample() (Header, []*Node) {
	h := Header{Created: 1700000000000, Server: 2, Format: 5, Shards: []ShardInfo{{ID: 1, Zxid: 0x1234501}, {ID: 2, Zxid: 0x999902}}}
	digest := []wire.ACL{{Perms: 31, ID: wire.ID{Scheme: "digest", ID: "user:abc="}}, {Perms: 1, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	nodes := []*Node{
		{Path: "/", Cversion: 3, Pzxid: 0x500101},
		{Path: "/a", Data: []byte{}, ACL: digest, Czxid: 0x100101, Mzxid: 0x200101, Pzxid: 0x300101, Ctime: 1, Mtime: 2, Version: 4, Cversion: 7, Aversion: 2},
		{Path: "/a/bin", Data: []byte{0, 1, 2, 255}, Type: Container},
		{Path: "/a/null", Data: nil, Type: TTL, TTL: 3600000},
		{Path: "/b", Data: bytes.Repeat([]byte("x"), 70000), Czxid: 0x900102},
	}
	return h, nodes
}

func encode(t *testing.T, h Header, nodes []*Node) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := w.Node(n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRoundTrip: what is written reads back equal, null data apart from empty, with the header
// and a trailer that counts the nodes and their largest zxid.
func TestRoundTrip(t *testing.T) {
	h, nodes := sample()
	file := encode(t, h, nodes)
	rd, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rd.Header(), h) {
		t.Fatalf("header %+v, want %+v", rd.Header(), h)
	}
	for i := 0; ; i++ {
		n, err := rd.Next()
		if err == io.EOF {
			if i != len(nodes) {
				t.Fatalf("%d nodes read, %d written", i, len(nodes))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(n, nodes[i]) {
			t.Fatalf("node %d: %+v, want %+v", i, n, nodes[i])
		}
	}
	if rd.Trailer().Nodes != 5 || rd.Trailer().MaxZxid != 0x900102 {
		t.Fatalf("trailer %+v", rd.Trailer())
	}
	if rd.Offset() != int64(len(file)) {
		t.Fatalf("offset %d after a file of %d bytes", rd.Offset(), len(file))
	}
}

// TestTruncatedEverywhere: every proper prefix of a file is refused with a FormatError, never
// read as a complete backup.
func TestTruncatedEverywhere(t *testing.T) {
	h, nodes := sample()
	file := encode(t, h, nodes)
	for n := 0; n < len(file); n += 1 + n/50 {
		_, _, err := Verify(bytes.NewReader(file[:n]))
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("prefix of %d bytes: %v, want a FormatError", n, err)
		}
		if n > len(Magic)+1 && !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("prefix of %d bytes: %v, want it called truncated", n, err)
		}
	}
}

// TestCorruptEverywhere: flipping any byte is caught, with the offset of the record it is in.
func TestCorruptEverywhere(t *testing.T) {
	h, nodes := sample()
	file := encode(t, h, nodes)
	for i := 0; i < len(file); i += 1 + i/100 {
		bad := bytes.Clone(file)
		bad[i] ^= 0x40
		_, _, err := Verify(bytes.NewReader(bad))
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("byte %d flipped: %v, want a FormatError", i, err)
		}
		if fe.Offset > int64(i) {
			t.Fatalf("byte %d flipped: reported at %d, after it", i, fe.Offset)
		}
	}
}

// TestOrderAndTrailerChecks: nodes out of key order, bytes after the trailer and a trailer
// whose count disagrees are refused.
func TestOrderAndTrailerChecks(t *testing.T) {
	h, nodes := sample()
	swapped := []*Node{nodes[0], nodes[2], nodes[1]}
	if _, _, err := Verify(bytes.NewReader(encode(t, h, swapped))); err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("out of order: %v", err)
	}
	file := append(encode(t, h, nodes), 0)
	if _, _, err := Verify(bytes.NewReader(file)); err == nil || !strings.Contains(err.Error(), "after the trailer") {
		t.Fatalf("trailing byte: %v", err)
	}
	// A trailer taken from a file with one node less (a record dropped, CRCs intact).
	short := encode(t, h, nodes[:4])
	full := encode(t, h, nodes)
	spliced := append(bytes.Clone(full[:len(full)-len(trailerOf(t, full))]), trailerOf(t, short)...)
	if _, _, err := Verify(bytes.NewReader(spliced)); err == nil || !strings.Contains(err.Error(), "trailer counts") {
		t.Fatalf("spliced trailer: %v", err)
	}
	if _, err := NewReader(strings.NewReader("ZKSNAPSHOT and more")); err == nil || !strings.Contains(err.Error(), "not a Corral backup") {
		t.Fatalf("wrong magic: %v", err)
	}
}

// trailerOf returns the bytes of file's trailer record (its last record).
func trailerOf(t *testing.T, file []byte) []byte {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for {
		last = rd.Offset()
		if _, err := rd.Next(); err == io.EOF {
			return file[last:]
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzReader: no input makes the reader panic or loop; whatever it accepts re-encodes to the
// same bytes.
func FuzzReader(f *testing.F) {
	h, nodes := sample()
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, h)
	for _, n := range nodes[:3] {
		w.Node(n)
	}
	w.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		rd, err := NewReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		var got []*Node
		for {
			n, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return
			}
			got = append(got, n)
		}
		var again bytes.Buffer
		w, err := NewWriter(&again, rd.Header())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range got {
			w.Node(n)
		}
		w.Close()
		if _, _, err := Verify(bytes.NewReader(again.Bytes())); err != nil {
			t.Fatalf("re-encoded file refused: %v", err)
		}
	})
}

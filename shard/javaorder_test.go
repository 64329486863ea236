package shard

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestJavaHashSetOrder(t *testing.T) {
	// Java: "/a".hashCode()=1554 (bucket 2 of 16), "/b"=1555 (3), "/ab"=48272 (0).
	for i, tc := range []struct {
		paths  []string
		czxids []int64
		want   []string
	}{
		{[]string{"/a", "/ab", "/b"}, []int64{1, 2, 3}, []string{"/ab", "/a", "/b"}},
		// Same bucket: insertion (creation) order decides. "/a" and "/q" differ by 16.
		{[]string{"/a", "/q"}, []int64{5, 4}, []string{"/q", "/a"}},
		{nil, nil, []string{}},
	} {
		got := javaHashSetOrder(tc.paths, tc.czxids)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("#%d: got %v, want %v", i, got, tc.want)
		}
	}
	if h := javaStringHash("/ab"); h != 48272 {
		t.Fatalf("hash = %d", h)
	}
	// Overflowing int32 arithmetic, as Java: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
	if h := javaStringHash("polygenelubricants"); h != -2147483648 {
		t.Fatalf("hash = %d, want -2147483648", h)
	}
	if h := javaStringHash("hello"); h != 99162322 {
		t.Fatalf("hash(hello) = %d", h)
	}
}

// TestJavaHashSetOrderMatchesJava replays orders recorded from Java 17 (Debian's openjdk-17, the
// JVM of the Debian zookeeper package): each line is "inserted paths|iteration order of
// new ArrayList<>((HashSet<String>) set.clone())", the order ZooKeeper 3.8.0's closeSession puts
// into its CloseSessionTxn. The generator: for 120 random sets of 1..30 paths, insert into a
// HashSet, clone it, list the clone.
func TestJavaHashSetOrderMatchesJava(t *testing.T) {
	data, err := os.ReadFile("testdata/javaorder_clone.orders")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		ins, want, ok := strings.Cut(line, "|")
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		paths := strings.Split(ins, ",")
		czxids := make([]int64, len(paths))
		for i := range czxids {
			czxids[i] = int64(i + 1)
		}
		if got := strings.Join(javaHashSetOrder(paths, czxids), ","); got != want {
			t.Errorf("set of %d:\n got  %s\n want %s", len(paths), got, want)
		}
		n++
	}
	if n < 100 {
		t.Fatalf("only %d cases", n)
	}
}

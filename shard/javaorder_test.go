package shard

import (
	"fmt"
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

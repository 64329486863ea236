package lograte

import (
	"fmt"
	"testing"
	"time"
)

func TestBurstPerKeyPerInterval(t *testing.T) {
	at := time.Unix(1000, 0)
	l := New(10*time.Second, 2, 100)
	l.now = func() time.Time { return at }

	for i := 0; i < 2; i++ {
		if ok, n := l.Allow("bad a"); !ok || n != 0 {
			t.Fatalf("line %d of the burst: %v %d", i+1, ok, n)
		}
	}
	for i := 0; i < 5; i++ {
		at = at.Add(time.Second)
		if ok, _ := l.Allow("bad a"); ok {
			t.Fatalf("line %d past the burst, within the interval, allowed", i+3)
		}
	}
	if ok, _ := l.Allow("bad b"); !ok {
		t.Fatal("another key's first line was held back")
	}
	at = at.Add(5 * time.Second) // 10 s after the first line
	if ok, n := l.Allow("bad a"); !ok || n != 5 {
		t.Fatalf("after the interval: %v, %d left out, want true, 5", ok, n)
	}
	if ok, n := l.Allow("bad a"); !ok || n != 0 {
		t.Fatalf("the new interval's second line: %v, %d", ok, n)
	}
	if ok, _ := l.Allow("bad a"); ok {
		t.Fatal("a third line in the new interval was allowed")
	}
}

func TestKeysBounded(t *testing.T) {
	at := time.Unix(1000, 0)
	l := New(10*time.Second, 1, 3)
	l.now = func() time.Time { return at }
	for i := 0; i < 3; i++ {
		if ok, _ := l.Allow(fmt.Sprint(i)); !ok {
			t.Fatalf("key %d held back", i)
		}
	}
	// Full: new keys share the overflow key, which takes one more entry.
	allowed := 0
	for i := 3; i < 50; i++ {
		if ok, _ := l.Allow(fmt.Sprint(i)); ok {
			allowed++
		}
	}
	if allowed != 1 || len(l.keys) != 4 {
		t.Fatalf("past the limit: %d lines allowed, %d keys kept; want 1 and 4", allowed, len(l.keys))
	}
	// Once the old keys' intervals are over, new keys get their own entry again.
	at = at.Add(11 * time.Second)
	if ok, _ := l.Allow("new"); !ok {
		t.Fatal("a new key after the old ones went quiet was held back")
	}
	if _, ok := l.keys["new"]; !ok {
		t.Fatal("the new key shares the overflow entry although the old keys were forgotten")
	}
}

package server

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestThrottleHoldsUntilBelowLimit(t *testing.T) {
	tr := throttle{limit: 4}
	if tr.wait(make(chan struct{}), nil) {
		t.Fatal("waited below the limit")
	}
	for range 4 {
		tr.add()
	}
	if tr.wait(nil, nil) {
		t.Fatal("held a connection with nothing outstanding")
	}
	done := make(chan bool, 1)
	go func() { done <- tr.wait(make(chan struct{}), nil) }()
	select {
	case <-done:
		t.Fatal("returned while at the limit")
	case <-time.After(20 * time.Millisecond):
	}
	tr.done()
	select {
	case w := <-done:
		if !w {
			t.Fatal("wait reported no wait")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not woken when the count dropped below the limit")
	}
	own := make(chan struct{})
	tr.add()
	go func() { done <- tr.wait(own, nil) }()
	close(own)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("not woken when the connection's own requests were answered")
	}
}

// TestThrottleNoLostWakeup: many connections wait, read (add) and have their requests answered
// (done) by other goroutines, as the proposer answers them; none sleeps on after the count
// dropped below the limit (a lost wake-up would hang the test).
func TestThrottleNoLostWakeup(t *testing.T) {
	tr := throttle{limit: 2}
	never := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				tr.wait(never, nil)
				tr.add()
				wg.Add(1)
				go func() {
					defer wg.Done()
					runtime.Gosched()
					tr.done()
				}()
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(60 * time.Second):
		t.Fatalf("workers stuck with %d outstanding", tr.outstanding())
	}
}

// TestThrottleResumesBelowMargin: held connections resume when the count is a tenth below the
// limit, not at the first answer.
func TestThrottleResumesBelowMargin(t *testing.T) {
	tr := throttle{limit: 20}
	for range 20 {
		tr.add()
	}
	done := make(chan bool, 1)
	go func() { done <- tr.wait(make(chan struct{}), nil) }()
	for tr.waiters.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	tr.done() // 19: still held (a connection not held yet would read at 19)
	select {
	case <-done:
		t.Fatal("resumed one below the limit")
	case <-time.After(20 * time.Millisecond):
	}
	tr.done() // 18 = 20 - 20/10
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("not resumed at the margin")
	}
}

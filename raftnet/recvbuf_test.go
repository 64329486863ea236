package raftnet

import "testing"

// TestRecvBufKeptUpToItsBound: a reader starts with recvBufStart bytes, keeps the larger buffer
// a frame up to recvBufSize needed, and does not keep a buffer over that bound.
func TestRecvBufKeptUpToItsBound(t *testing.T) {
	buf := make([]byte, recvBufStart)
	if got := keptRecvBuf(buf, buf[:100]); &got[0] != &buf[0] {
		t.Fatal("a frame that fit replaced the buffer")
	}
	mid := make([]byte, 1<<20)
	buf = keptRecvBuf(buf, mid)
	if &buf[0] != &mid[0] || len(buf) != len(mid) {
		t.Fatalf("a 1 MiB frame's buffer not kept: %d bytes", len(buf))
	}
	huge := make([]byte, recvBufSize+1)
	if got := keptRecvBuf(buf, huge); &got[0] != &buf[0] {
		t.Fatalf("a frame over the bound replaced the buffer (%d bytes kept)", len(got))
	}
}

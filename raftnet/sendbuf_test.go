package raftnet

import "testing"

// TestSendBufKeptUpToItsBound: a batch up to sendBufKeep grows the connection's buffer, which
// the next batches then reuse without allocating; a larger batch gets a buffer of its own.
func TestSendBufKeptUpToItsBound(t *testing.T) {
	c := &msgConn{buf: make([]byte, sendBufSize)}
	if b := c.sendBuf(100); &b[0] != &c.buf[0] {
		t.Fatal("a small batch did not use the connection's buffer")
	}
	big := sendBufSize * 3
	c.sendBuf(big)
	if len(c.buf) < big {
		t.Fatalf("buffer %d bytes after a batch of %d: not kept", len(c.buf), big)
	}
	if n := testing.AllocsPerRun(10, func() { c.sendBuf(big) }); n != 0 {
		t.Fatalf("a batch the kept buffer fits allocated %v times", n)
	}
	kept := len(c.buf)
	if b := c.sendBuf(sendBufKeep + 1); len(b) <= sendBufKeep || len(c.buf) != kept {
		t.Fatalf("a batch over the bound: got %d bytes, connection buffer %d (was %d)", len(b), len(c.buf), kept)
	}
}

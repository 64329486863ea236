package raftnet

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	pb "github.com/lni/dragonboat/v4/raftpb"
)

// msgConn is a sending link for Raft message batches; dragonboat calls SendMessageBatch and
// Close from one goroutine.
//
// Invariant: a batch is reported failed only if the peer could not be dialled or did not take
// the batch in time on a link dialled for it; a link that the peer closed or reset (it
// restarted) is replaced, never reported. Dragonboat drops every message to a peer for a while
// after one failed send (see doc.go), so a failure must mean the peer is unreachable.
type msgConn struct {
	t      *Transport
	target string
	nc     net.Conn
	raw    syscall.Conn // nc's socket, below TLS if any
	buf    []byte
}

// redial replaces the connection's link with a new one to the same peer.
func (c *msgConn) redial(ctx context.Context) error {
	c.drop()
	nc, raw, err := c.t.dial(ctx, c.target)
	if err != nil {
		return err
	}
	c.nc, c.raw = nc, raw
	return nil
}

// drop closes the current link, if any.
func (c *msgConn) drop() {
	if c.nc != nil {
		c.nc.Close()
		c.nc, c.raw = nil, nil
	}
}

// SendMessageBatch implements raftio.IConnection.
func (c *msgConn) SendMessageBatch(b pb.MessageBatch) error {
	payload := pb.MustMarshalTo(&b, c.sendBuf(b.SizeUpperLimit()))
	fresh := false
	if c.nc == nil || !linkOpen(c.raw) {
		c.t.log.Debug("raft transport: peer closed an idle link, dialling again", "target", c.target)
		if err := c.redial(context.Background()); err != nil {
			return err
		}
		fresh = true
	}
	err := writeFrame(c.nc, methodBatch, payload, c.t.tls)
	if err == nil || fresh || !peerWentAway(err) {
		return err
	}
	// The peer reset the link between the watcher's last look and this write (a restart):
	// send the batch once more on a new link. Raft ignores a message it receives twice.
	c.t.log.Debug("raft transport: peer reset a link, dialling again", "target", c.target, "err", err)
	if err := c.redial(context.Background()); err != nil {
		return err
	}
	return writeFrame(c.nc, methodBatch, payload, c.t.tls)
}

// sendBuf returns a marshalling buffer of at least sz bytes: the connection's own, grown and
// kept when sz is at most sendBufKeep, a fresh one otherwise. SendMessageBatch runs on one
// goroutine per connection, and the buffer is free again once its frame is written.
func (c *msgConn) sendBuf(sz int) []byte {
	if len(c.buf) >= sz {
		return c.buf
	}
	buf := make([]byte, sz)
	if sz <= sendBufKeep {
		c.buf = buf
	}
	return buf
}

// peerWentAway tells a write that failed because the peer ended the link (it restarted or
// closed it) from one that timed out (the peer is unreachable or stuck).
func peerWentAway(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// Close implements raftio.IConnection.
func (c *msgConn) Close() {
	c.drop()
	c.t.mu.Lock()
	delete(c.t.sending, c)
	c.t.mu.Unlock()
}

// snapConn is a sending link for one snapshot's chunks. A failed chunk fails the snapshot,
// which dragonboat sends again later; nothing is redialled.
type snapConn struct {
	nc  net.Conn
	tls bool
}

// SendChunk implements raftio.ISnapshotConnection.
func (c *snapConn) SendChunk(ch pb.Chunk) error {
	buf := make([]byte, ch.Size())
	return writeFrame(c.nc, methodChunk, pb.MustMarshalTo(&ch, buf), c.tls)
}

// Close implements raftio.ISnapshotConnection: it ends the stream with the poison and waits (a
// bounded time) for the receiver's echo, so the receiver has read every chunk before the link
// closes.
func (c *snapConn) Close() {
	defer c.nc.Close()
	c.nc.SetWriteDeadline(time.Now().Add(writeGrace))
	if _, err := c.nc.Write(poison[:]); err != nil {
		return
	}
	var ack [2]byte
	c.nc.SetReadDeadline(time.Now().Add(readGrace))
	io.ReadFull(c.nc, ack[:])
}

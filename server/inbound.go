package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral/corral/wire"
)

// Reading requests apart from handling them.
//
// Invariant: a client that keeps sending keeps its session, however long one of its requests
// waits. ZooKeeper touches a session for every packet it reads; Corral reports the activity of
// every frame as the frame arrives (touch), on a frame reader goroutine that reads ahead of the
// request goroutine. Handling is in order and may wait — a write on a shard electing a leader,
// a ping behind earlier replies, the ownership record after a take-over, a read catching up —
// and the client's pings meanwhile renew the session's lease (lease.go) instead of going unread
// until the watchdog closes a connection whose client was speaking all along.
//
// The reader holds at most readAheadBytes of unhandled frames, so a client that pipelines
// faster than its requests are handled is slowed by TCP, as before; its pings then wait in the
// socket like ZooKeeper's do when it throttles a connection. It also holds at most batchesAhead
// batches, and a ping that arrives alone is a batch of its own: batchesAhead is large enough
// that a client pinging ten times a second behind a request that waits a whole session timeout
// is still read, and renewed, throughout (with 4, such a client was read for 0.6 s only and its
// lease could lapse just before the request's answer: TestPingsRenewTheSessionWhileARequestWaits
// failed now and then).
//
// Frames travel in batches: after a frame, the reader takes every further frame the socket
// buffer already holds whole (up to batchFrames) without waiting, into one slab, and hands the
// batch over with one channel operation and one activity report. A pipelining client's
// requests arrive many to a read, so the hand-off costs per burst, not per request; a ping
// that arrives alone is handed over alone, at once.
const (
	readAheadBytes = 256 << 10
	batchFrames    = 64
	batchesAhead   = 24
	// batchesKept is how many handled batches (and their 16 KiB slabs) a connection keeps for
	// reuse; the others go to the garbage collector, so a connection that once had many
	// batches queued does not hold their memory.
	batchesKept = 5
)

// deadlineEvery bounds how often the read deadline moves: setting one costs a clock reading and
// a poller update, so a silent client may be closed up to deadlineEvery before its full timeout.
const deadlineEvery = 100 * time.Millisecond

// batch is frames read together; frames that fit are slices of slab.
type batch struct {
	frames [][]byte
	slab   []byte
	bytes  int64
}

// inbound is the hand-off between the frame reader and the request goroutine.
type inbound struct {
	batches chan *batch   // read, not yet handled; closed when the reader ends
	free    chan *batch   // handled batches, for the reader to reuse
	credit  chan struct{} // a batch was handled (the reader may be waiting for room)
	queued  atomic.Int64  // bytes in batches
	stop    chan struct{} // closed when the request goroutine ends
	err     error         // why the reader ended; read after batches is closed

	// deadline orders the reader's deadline moves with the request goroutine's final one, so
	// the reader never blocks past the end of the request goroutine.
	deadline struct {
		sync.Mutex
		stopped bool
	}
}

// moveDeadline sets the read deadline unless the request goroutine ended; false if it did.
func (in *inbound) moveDeadline(nc net.Conn, t time.Time) bool {
	in.deadline.Lock()
	defer in.deadline.Unlock()
	if in.deadline.stopped {
		return false
	}
	nc.SetReadDeadline(t)
	return true
}

// end tells the reader to stop and unblocks a read in progress; the connection stays open, so
// the writer can still send the last replies.
func (in *inbound) end(nc net.Conn) {
	close(in.stop)
	in.deadline.Lock()
	in.deadline.stopped = true
	nc.SetReadDeadline(time.Now())
	in.deadline.Unlock()
}

// requestLoop handles the client's requests in order until the client goes or a request ends
// the connection; it starts the frame reader and returns only after it ended.
func (c *conn) requestLoop(r *bufio.Reader) {
	in := &inbound{batches: make(chan *batch, batchesAhead), free: make(chan *batch, batchesKept),
		credit: make(chan struct{}, 1), stop: make(chan struct{})}
	readerEnd := make(chan struct{})
	go func() {
		defer close(readerEnd)
		c.readFrames(r, in)
	}()
	defer func() {
		c.flushGroup() // a pending group completes its slots, replied or not
		in.end(c.nc)
		<-readerEnd
	}()
	for {
		b, ok := c.nextBatch(in)
		if !ok {
			break
		}
		for _, frame := range b.frames {
			c.throttle()
			c.s.stats.received.Add(1)
			if !c.handle(frame) {
				return
			}
		}
		in.queued.Add(-b.bytes)
		select {
		case in.credit <- struct{}{}:
		default:
		}
		b.frames, b.slab, b.bytes = b.frames[:0], b.slab[:0], 0
		select {
		case in.free <- b:
		default:
		}
	}
	switch err := in.err; {
	case errors.Is(err, wire.ErrFrameTooLarge):
		c.logBad("reading request", err)
	case isTimeout(err):
		c.s.o.Log.Info("client silent for the session timeout, closing", "session", sessionHex(c.sessionID))
	}
}

// nextBatch returns the next batch of frames, false once the reader ended. While a group of
// writes is pending it also watches for the earlier replies the group waits for, and starts the
// group as soon as they are queued: the writes read until then joined it (group.go).
func (c *conn) nextBatch(in *inbound) (*batch, bool) {
	for c.group != nil {
		g := c.group
		var ready, decided <-chan struct{} // nil: none, or lingering already
		var lingered <-chan time.Time
		if g.lingerEnd != nil {
			lingered = g.lingerEnd.C
		} else {
			ready = g.ready
			if g.after != nil {
				decided = g.after.decided
			}
		}
		select {
		case b, ok := <-in.batches:
			return b, ok
		case <-ready:
		case <-decided: // it may start now if it spans shards (runGroup)
		case <-lingered:
			c.flushGroup()
			continue
		}
		// First it waits a little for the writes the client sends for the replies just
		// queued at the earlier group's decision (group.go, linger).
		if !c.linger(g) {
			c.flushGroup()
		}
	}
	b, ok := <-in.batches
	return b, ok
}

// readFrames reads batches of frames into in.batches, reporting the session's activity for
// each, until the connection fails, the client is silent for its session timeout, or the
// request goroutine ends.
func (c *conn) readFrames(r *bufio.Reader, in *inbound) {
	defer close(in.batches)
	var deadlineSet time.Time
	now := time.Now()
	for {
		if deadlineSet.IsZero() || now.Sub(deadlineSet) >= deadlineEvery {
			deadlineSet = now
			if !in.moveDeadline(c.nc, c.readDeadlineFrom(now)) {
				return
			}
		}
		for in.queued.Load() >= readAheadBytes {
			select {
			case <-in.credit:
			case <-in.stop:
				return
			}
		}
		var b *batch
		select {
		case b = <-in.free:
		default:
			b = &batch{slab: make([]byte, 0, 16<<10)}
		}
		// The first frame may wait for the client; the rest of the batch is what the buffer
		// holds whole already.
		err := c.readInto(r, b)
		for err == nil && len(b.frames) < batchFrames && b.bytes < readAheadBytes && frameBuffered(r, c.s.o.MaxBuffer) {
			err = c.readInto(r, b)
		}
		if len(b.frames) > 0 {
			now = time.Now()
			if !c.readOnly {
				c.touch(now)
			}
			in.queued.Add(b.bytes)
			select {
			case in.batches <- b:
			case <-in.stop:
				return
			}
		}
		if err != nil {
			select {
			case <-in.stop: // the request goroutine ended the connection
			default:
				in.err = err
			}
			return
		}
	}
}

// readInto reads one frame into b, into its slab when it fits.
func (c *conn) readInto(r *bufio.Reader, b *batch) error {
	tail := b.slab[len(b.slab):]
	frame, err := wire.ReadFrame(r, tail, c.s.o.MaxBuffer)
	if err != nil {
		return err
	}
	if cap(tail) >= len(frame) {
		b.slab = b.slab[:len(b.slab)+len(frame)] // ReadFrame used the slab's free space
	}
	b.frames = append(b.frames, frame)
	b.bytes += int64(len(frame)) + 4
	return nil
}

// frameBuffered reports whether r holds a whole valid frame, so reading it will not block.
func frameBuffered(r *bufio.Reader, max int) bool {
	if r.Buffered() < 4 {
		return false
	}
	hdr, _ := r.Peek(4)
	n := int(int32(binary.BigEndian.Uint32(hdr)))
	return n >= 0 && n <= max && r.Buffered() >= 4+n
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

package server

import (
	"bufio"
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
// The reader holds at most readAheadBytes of unhandled frames (and at most readAheadFrames of
// them), so a client that pipelines faster than its requests are handled is slowed by TCP, as
// before; its pings then wait in the socket like ZooKeeper's do when it throttles a connection.
const (
	readAheadBytes  = 256 << 10
	readAheadFrames = 64
)

// deadlineEvery bounds how often the read deadline moves: setting one costs a clock reading and
// a poller update, so a silent client may be closed up to this much before its full timeout.
const deadlineEvery = 100 * time.Millisecond

// inbound is the hand-off between the frame reader and the request goroutine.
type inbound struct {
	frames chan []byte   // read, not yet handled; closed when the reader ends
	free   chan []byte   // handled frames' buffers, for the reader to reuse
	credit chan struct{} // a frame was handled (the reader may be waiting for room)
	queued atomic.Int64  // bytes in frames
	stop   chan struct{} // closed when the request goroutine ends
	err    error         // why the reader ended; read after frames is closed

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
	in := &inbound{frames: make(chan []byte, readAheadFrames), free: make(chan []byte, 4),
		credit: make(chan struct{}, 1), stop: make(chan struct{})}
	readerEnd := make(chan struct{})
	go func() {
		defer close(readerEnd)
		c.readFrames(r, in)
	}()
	defer func() {
		in.end(c.nc)
		<-readerEnd
	}()
	for frame := range in.frames {
		c.throttle()
		c.s.stats.received.Add(1)
		ok := c.handle(frame)
		in.queued.Add(-int64(len(frame)))
		select {
		case in.credit <- struct{}{}:
		default:
		}
		select {
		case in.free <- frame[:0]:
		default:
		}
		if !ok {
			return
		}
	}
	switch err := in.err; {
	case errors.Is(err, wire.ErrFrameTooLarge):
		c.logBad("reading request", err)
	case isTimeout(err):
		c.s.o.Log.Info("client silent for the session timeout, closing", "session", sessionHex(c.sessionID))
	}
}

// readFrames reads frames into in.frames, reporting the session's activity for each, until the
// connection fails, the client is silent for its session timeout, or the request goroutine
// ends.
func (c *conn) readFrames(r *bufio.Reader, in *inbound) {
	defer close(in.frames)
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
		var buf []byte
		select {
		case buf = <-in.free:
		default:
		}
		frame, err := wire.ReadFrame(r, buf, c.s.o.MaxBuffer)
		if err != nil {
			select {
			case <-in.stop: // the request goroutine ended the connection
			default:
				in.err = err
			}
			return
		}
		now = time.Now()
		if !c.readOnly {
			c.touch(now)
		}
		in.queued.Add(int64(len(frame)))
		select {
		case in.frames <- frame:
		case <-in.stop:
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

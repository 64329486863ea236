package raftnet

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/corral/corral/tlsconf"
	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// Name is the transport's name as dragonboat reports it.
const Name = "corral-tcp"

// Timing of the links between servers.
const (
	dialTimeout = 2 * time.Second // a reachable peer on a LAN answers a dial in milliseconds
	writeGrace  = 5 * time.Second // per frame, plus a second per MiB (dragonboat's bound)
	readGrace   = 5 * time.Second // for the rest of a frame once its magic number came
	userTimeout = 5 * time.Second // TCP_USER_TIMEOUT: unacknowledged data abandons the link
	keepIdle    = 2 * time.Second // keepalive probes on an idle link after this,
	keepIntvl   = time.Second     // every keepIntvl,
	keepCount   = 3               // and the link is dead after keepCount unanswered
	// recvBufSize bounds how far a reader's payload buffer grows to be reused: one snapshot
	// chunk fits. It starts at recvBufStart and grows to the largest frame read so far, so an
	// idle or lightly loaded link holds 64 KiB, not 2 MiB, of live heap (the collector's target
	// grows with the live heap).
	recvBufSize  = 2<<20 + 128<<10
	recvBufStart = 64 << 10
	sendBufSize  = 256 << 10 // a sender's marshalling buffer to start with
	// sendBufKeep bounds how far a sender's buffer grows to be reused: a batch of a saturating
	// write load (messages up to corral.raftMessageBytes, 1 MiB, several per batch) fits, and
	// is then marshalled without allocating; a larger one gets a buffer of its own.
	sendBufKeep = 4 << 20
	// readAheadSize is a reader's socket buffer: frames of small batches that arrive together
	// are read with one system call (a larger payload is read straight into its buffer).
	readAheadSize = 64 << 10
)

// Factory creates the transport for a NodeHost; set it as
// config.NodeHostConfig.Expert.TransportFactory.
type Factory struct {
	// Log receives the transport's rare events (a malformed frame, a redial); nil discards.
	Log *slog.Logger
	// TLS, when set (sslQuorum), makes every link TLS from its stores: accepted links are
	// served by a tlsconf.Listener (a peer without a certificate the trust store verifies, or
	// speaking plaintext, is closed with one log line), dialled links present this server's
	// certificate and verify the peer's. It takes the place of NodeHostConfig.MutualTLS.
	TLS *tlsconf.Source
}

// Create implements config.TransportFactory.
func (f Factory) Create(nhc config.NodeHostConfig, onBatch raftio.MessageHandler, onChunk raftio.ChunkHandler) raftio.ITransport {
	log := f.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Transport{nhc: nhc, onBatch: onBatch, onChunk: onChunk, log: log, tls: nhc.MutualTLS || f.TLS != nil, src: f.TLS,
		stop: make(chan struct{}), accepted: map[net.Conn]struct{}{}, sending: map[*msgConn]struct{}{}}
}

// Validate implements config.TransportFactory: a Raft address is host:port.
func (Factory) Validate(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	return err == nil && host != "" && port != ""
}

// Transport is a raftio.ITransport over TCP (or TLS when the NodeHost asks for mutual TLS).
type Transport struct {
	nhc     config.NodeHostConfig
	onBatch raftio.MessageHandler
	onChunk raftio.ChunkHandler
	log     *slog.Logger
	tls     bool            // links are TLS (frames then carry no payload checksum)
	src     *tlsconf.Source // sslQuorum's stores; nil: NodeHostConfig's TLS, if any

	ln   net.Listener
	stop chan struct{}
	wg   sync.WaitGroup // the accept loop and the readers of accepted connections

	mu       sync.Mutex
	closed   bool
	accepted map[net.Conn]struct{}
	sending  map[*msgConn]struct{}
}

var _ raftio.ITransport = (*Transport)(nil)

// Name implements raftio.ITransport.
func (t *Transport) Name() string { return Name }

// Start listens on the NodeHost's listen address and serves incoming links.
func (t *Transport) Start() error {
	tc, err := t.nhc.GetServerTLSConfig()
	if err != nil {
		return err
	}
	lc := net.ListenConfig{KeepAliveConfig: keepAlive()}
	ln, err := lc.Listen(context.Background(), "tcp", t.nhc.GetListenAddress())
	if err != nil {
		return err
	}
	switch {
	case t.src != nil:
		ln = tlsconf.NewListener(ln, t.src, t.log)
	case tc != nil:
		ln = tls.NewListener(ln, tc)
	}
	t.ln = ln
	t.wg.Add(1)
	go t.acceptLoop()
	return nil
}

// Close stops listening, closes every link (incoming and outgoing) and waits for the goroutines
// reading them.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.stop)
	for nc := range t.accepted {
		nc.Close()
	}
	sending := make([]*msgConn, 0, len(t.sending))
	for c := range t.sending {
		sending = append(sending, c)
	}
	t.mu.Unlock()
	if t.ln != nil {
		t.ln.Close()
	}
	for _, c := range sending {
		c.Close()
	}
	t.wg.Wait()
	return nil
}

func (t *Transport) acceptLoop() {
	defer t.wg.Done()
	for {
		nc, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.stop:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			t.log.Warn("raft transport: accept failed", "err", err)
			select {
			case <-t.stop:
				return
			case <-time.After(100 * time.Millisecond): // e.g. out of file descriptors
			}
			continue
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			nc.Close()
			return
		}
		t.accepted[nc] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go t.serve(nc)
	}
}

// serve reads frames from one incoming link and hands them to dragonboat until the link ends.
func (t *Transport) serve(nc net.Conn) {
	defer func() {
		nc.Close()
		t.mu.Lock()
		delete(t.accepted, nc)
		t.mu.Unlock()
		t.wg.Done()
	}()
	buf := make([]byte, recvBufStart)
	br := bufio.NewReaderSize(nc, readAheadSize)
	for {
		method, payload, err := readFrame(nc, br, buf, t.tls)
		buf = keptRecvBuf(buf, payload)
		switch {
		case errors.Is(err, errPoison):
			nc.SetWriteDeadline(time.Now().Add(writeGrace))
			nc.Write(poison[:])
			return
		case errors.Is(err, errBadFrame):
			t.log.Warn("raft transport: closing a link that sent a malformed frame", "remote", nc.RemoteAddr().String(), "err", err)
			return
		case err != nil:
			return // the peer closed the link, or it failed
		}
		if method == methodBatch {
			var b pb.MessageBatch
			if err := b.Unmarshal(payload); err != nil {
				t.log.Warn("raft transport: closing a link that sent an undecodable batch", "remote", nc.RemoteAddr().String(), "err", err)
				return
			}
			t.onBatch(b)
			continue
		}
		var c pb.Chunk
		if err := c.Unmarshal(payload); err != nil {
			t.log.Warn("raft transport: closing a link that sent an undecodable snapshot chunk", "remote", nc.RemoteAddr().String(), "err", err)
			return
		}
		if !t.onChunk(c) {
			return // dragonboat refused the stream
		}
	}
}

// keptRecvBuf returns the buffer a reader keeps for its next frame after reading payload into
// buf or, when buf was too small, into a slice of its own: that slice, if it is no larger than
// recvBufSize. Nothing keeps a payload once its frame is handled (dragonboat copies what it
// decodes), so the next frame may overwrite it.
func keptRecvBuf(buf, payload []byte) []byte {
	if cap(payload) > cap(buf) && cap(payload) <= recvBufSize {
		return payload[:cap(payload)]
	}
	return buf
}

// dial opens a link to target, with keepalives, TCP_USER_TIMEOUT and, when configured, TLS.
// raw is the TCP socket below TLS, for linkOpen.
func (t *Transport) dial(ctx context.Context, target string) (nc net.Conn, raw syscall.Conn, err error) {
	d := net.Dialer{Timeout: dialTimeout, KeepAliveConfig: keepAlive(), Control: setUserTimeout}
	nc, err = d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, nil, err
	}
	tcp := nc.(*net.TCPConn)
	tcp.SetLinger(0) // a closed link is reset at once, as dragonboat's are
	var tc *tls.Config
	if t.src != nil {
		tc = t.src.ClientConfig(target)
	} else if tc, err = t.nhc.GetClientTLSConfig(target); err != nil {
		nc.Close()
		return nil, nil, err
	}
	if tc != nil {
		tlc := tls.Client(nc, tc)
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := tlc.HandshakeContext(hctx); err != nil {
			nc.Close()
			if t.src != nil {
				t.log.Debug("raft transport: TLS handshake with a peer failed", "target", target, "err", err)
			}
			return nil, nil, err
		}
		nc = tlc
	}
	return nc, tcp, nil
}

func keepAlive() net.KeepAliveConfig {
	return net.KeepAliveConfig{Enable: true, Idle: keepIdle, Interval: keepIntvl, Count: keepCount}
}

// GetConnection implements raftio.ITransport: a link for Raft message batches to target.
func (t *Transport) GetConnection(ctx context.Context, target string) (raftio.IConnection, error) {
	c := &msgConn{t: t, target: target, buf: make([]byte, sendBufSize)}
	if err := c.redial(ctx); err != nil {
		return nil, err
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		c.drop()
		return nil, errors.New("raftnet: transport closed")
	}
	t.sending[c] = struct{}{}
	t.mu.Unlock()
	return c, nil
}

// GetSnapshotConnection implements raftio.ITransport: a link for one snapshot's chunks.
func (t *Transport) GetSnapshotConnection(ctx context.Context, target string) (raftio.ISnapshotConnection, error) {
	nc, _, err := t.dial(ctx, target)
	if err != nil {
		return nil, err
	}
	return &snapConn{nc: nc, tls: t.tls}, nil
}

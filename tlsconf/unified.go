package tlsconf

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/corral/corral/internal/lograte"
)

// tlsHandshakeRecord is the first byte of every TLS connection: the content type of the record
// carrying the ClientHello (RFC 8446 §5.1, and the same in TLS 1.0-1.2). An HTTP request starts
// with a method's letter.
const tlsHandshakeRecord = 0x16

// UnifiedListener serves TLS and plaintext on one port (the admin port with
// admin.portUnification, as the UnifiedConnectionFactory of ZooKeeper's admin server): for each
// accepted connection a goroutine of its own waits, up to the detection timeout, for the first
// byte; a TLS handshake record makes the connection a *tls.Conn with cfg (its handshake is the
// caller's: net/http runs it and fills Request.TLS), anything else a plaintext connection that
// reads that byte again. A connection that sends nothing within the timeout, or closes first,
// is closed (a debug line; a timeout a warn line, rate limited per client host). Accept
// returns connections in the order their first byte arrived; Close stops the accept loop,
// closes the connections still being detected and waits for the goroutines.
type UnifiedListener struct {
	inner   net.Listener
	cfg     *tls.Config
	timeout time.Duration
	what    string
	log     *slog.Logger
	ready   chan net.Conn
	closing chan struct{}
	wg      sync.WaitGroup
	mu      struct {
		sync.Mutex
		closed  bool
		pending map[net.Conn]struct{} // connections whose first byte is awaited
	}
	limit *lograte.Limiter // detection timeouts, per client host
}

// NewUnifiedListener serves cfg's TLS and plaintext on inner and starts its accept loop. what
// names the port in log lines ("admin port"); timeout bounds the wait for the first byte.
func NewUnifiedListener(inner net.Listener, cfg *tls.Config, timeout time.Duration, what string, log *slog.Logger) *UnifiedListener {
	if log == nil {
		log = slog.Default()
	}
	l := &UnifiedListener{inner: inner, cfg: cfg, timeout: timeout, what: what, log: log,
		ready: make(chan net.Conn), closing: make(chan struct{}), limit: lograte.New(badLogEvery, badLogBurst, badLogKeys)}
	l.mu.pending = map[net.Conn]struct{}{}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.acceptLoop()
	}()
	return l
}

func (l *UnifiedListener) acceptLoop() {
	for {
		raw, err := l.inner.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			if !l.isClosed() {
				l.log.Error(l.what+" stopped accepting", "err", err)
			}
			return
		}
		l.mu.Lock()
		if l.mu.closed {
			l.mu.Unlock()
			raw.Close()
			return
		}
		l.mu.pending[raw] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go func() {
			defer l.wg.Done()
			l.detect(raw)
		}()
	}
}

// detect reads the first byte of raw and hands the connection to Accept as TLS or plaintext.
func (l *UnifiedListener) detect(raw net.Conn) {
	var first [1]byte
	raw.SetReadDeadline(time.Now().Add(l.timeout))
	_, err := io.ReadFull(raw, first[:])
	raw.SetReadDeadline(time.Time{})
	l.mu.Lock()
	delete(l.mu.pending, raw)
	closed := l.mu.closed
	l.mu.Unlock()
	if closed {
		raw.Close()
		return
	}
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			l.limit.Warn(l.log, l.what+": nothing received within the detection timeout, closing", raw.RemoteAddr().String(), "timeout", l.timeout)
		} else {
			l.log.Debug(l.what+": connection closed before its first byte", "remote", raw.RemoteAddr().String())
		}
		raw.Close()
		return
	}
	var c net.Conn = &replayConn{Conn: raw, first: first[0], pending: true}
	if first[0] == tlsHandshakeRecord {
		c = tls.Server(c, l.cfg)
	}
	select {
	case l.ready <- c:
	case <-l.closing:
		raw.Close()
	}
}

// Accept returns the next connection whose first byte arrived: a *tls.Conn (handshake not yet
// run) or a plaintext connection.
func (l *UnifiedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.closing:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, closes the connections still being detected and waits for the
// listener's goroutines. Connections already returned by Accept are the caller's.
func (l *UnifiedListener) Close() error {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return nil
	}
	l.mu.closed = true
	close(l.closing)
	for c := range l.mu.pending {
		c.Close()
	}
	l.mu.Unlock()
	err := l.inner.Close()
	l.wg.Wait()
	return err
}

func (l *UnifiedListener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.closed
}

// Addr is the port's address.
func (l *UnifiedListener) Addr() net.Addr { return l.inner.Addr() }

// replayConn is a connection whose first byte was read to detect TLS: Read returns it first.
type replayConn struct {
	net.Conn
	first   byte
	pending bool // first not yet returned; Read and the detection are never concurrent
}

func (c *replayConn) Read(p []byte) (int, error) {
	if c.pending && len(p) > 0 {
		p[0] = c.first
		c.pending = false
		return 1, nil
	}
	return c.Conn.Read(p)
}

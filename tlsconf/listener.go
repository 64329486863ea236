package tlsconf

import (
	"context"
	"crypto/tls"
	"errors"
	"github.com/corral/corral/internal/lograte"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/corral/corral/wire"
)

// Conn is a secure client port connection whose TLS handshake has completed.
type Conn struct {
	*tls.Conn
	ids []wire.ID
}

// PeerIDs returns the identities the client's certificate gives it (x509, and super for
// X509AuthenticationProvider.superUser); none without a certificate. The connection layer adds
// them to the connection's identities (package server).
func (c *Conn) PeerIDs() []wire.ID { return c.ids }

// Identities returns the ids X509AuthenticationProvider gives a client whose handshake
// presented (and verified) the certificate chain of state: super:<name> when the subject name
// is superUser, then x509:<name>.
func Identities(state tls.ConnectionState, superUser string) ([]wire.ID, error) {
	if len(state.PeerCertificates) == 0 {
		return nil, nil
	}
	name, err := RFC2253Name(state.PeerCertificates[0])
	if err != nil {
		return nil, err
	}
	var ids []wire.ID
	if superUser != "" && name == superUser {
		ids = append(ids, wire.ID{Scheme: "super", ID: name})
	}
	return append(ids, wire.ID{Scheme: "x509", ID: name}), nil
}

// Listener accepts TLS connections: each accepted connection's handshake runs in a goroutine of
// its own, bounded by the handshake timeout, and Accept returns only connections whose
// handshake completed (as *Conn). A connection whose handshake fails is closed with one log
// line (at most badLogBurst per client host and kind of failure every badLogEvery: a client
// retrying in a loop does not flood the log); plaintext on the port writes nothing back. Close stops the accept loop and the
// handshakes in progress and waits for their goroutines.
type Listener struct {
	inner   net.Listener
	src     *Source
	log     *slog.Logger
	badLog  *lograte.Limiter // failed handshakes (see Listener)
	ready   chan net.Conn
	closing chan struct{}
	wg      sync.WaitGroup
	mu      struct {
		sync.Mutex
		closed    bool
		handshake map[net.Conn]struct{} // raw connections whose handshake runs
	}
}

const (
	badLogEvery = 10 * time.Second
	badLogBurst = 3
	badLogKeys  = 4096
)

// NewListener serves TLS from src on inner and starts its accept loop.
func NewListener(inner net.Listener, src *Source, log *slog.Logger) *Listener {
	if log == nil {
		log = slog.Default()
	}
	l := &Listener{inner: inner, src: src, log: log, badLog: lograte.New(badLogEvery, badLogBurst, badLogKeys),
		ready: make(chan net.Conn), closing: make(chan struct{})}
	l.mu.handshake = map[net.Conn]struct{}{}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.acceptLoop()
	}()
	return l
}

func (l *Listener) acceptLoop() {
	for {
		raw, err := l.inner.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			if !l.isClosed() {
				l.log.Error(l.src.set.what()+" stopped accepting", "err", err)
			}
			return
		}
		l.mu.Lock()
		if l.mu.closed {
			l.mu.Unlock()
			raw.Close()
			return
		}
		l.mu.handshake[raw] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go func() {
			defer l.wg.Done()
			l.handshake(raw)
		}()
	}
}

func (l *Listener) handshake(raw net.Conn) {
	set := &l.src.set
	tc := tls.Server(raw, set.acceptConfig(l.src.Config(), raw.RemoteAddr()))
	ctx, cancel := context.WithTimeout(context.Background(), set.HandshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	l.mu.Lock()
	delete(l.mu.handshake, raw)
	closed := l.mu.closed
	l.mu.Unlock()
	if closed {
		raw.Close()
		return
	}
	var ids []wire.ID
	if err == nil {
		ids, err = Identities(tc.ConnectionState(), set.SuperUser)
	}
	if err != nil {
		var rh tls.RecordHeaderError
		switch {
		case errors.As(err, &rh):
			l.badLog.Warn(l.log, set.what()+": not a TLS client (plaintext?), closing", raw.RemoteAddr().String())
		case errors.Is(err, io.EOF):
			// Closed before sending anything: a reachability probe (cluster's peerReachable).
			l.log.Debug(set.what()+": connection closed before a TLS handshake", "remote", raw.RemoteAddr().String())
		default:
			l.badLog.Warn(l.log, set.what()+": TLS handshake failed, closing", raw.RemoteAddr().String(), "err", err)
		}
		raw.Close()
		return
	}
	c := &Conn{Conn: tc, ids: ids}
	select {
	case l.ready <- c:
	case <-l.closing:
		raw.Close()
	}
}

// Accept returns the next connection whose handshake completed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.closing:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, closes the connections still in their handshake and waits for the
// listener's goroutines. Connections already returned by Accept are the caller's.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return nil
	}
	l.mu.closed = true
	close(l.closing)
	for c := range l.mu.handshake {
		c.Close()
	}
	l.mu.Unlock()
	err := l.inner.Close()
	l.wg.Wait()
	return err
}

func (l *Listener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.closed
}

// Addr is the secure port's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// Merge returns one listener accepting from all of ls (the plaintext and the secure client
// port, served by one server). Its Addr is the first's. Close closes every listener and waits
// for the goroutine accepting from each. An Accept error other than a timeout ends that
// listener's loop; when every loop has ended, Accept returns the first such error.
func Merge(ls ...net.Listener) net.Listener {
	if len(ls) == 1 {
		return ls[0]
	}
	m := &merged{ls: ls, conns: make(chan net.Conn), closing: make(chan struct{}), done: make(chan struct{})}
	m.wg.Add(len(ls))
	for _, l := range ls {
		go func() {
			defer m.wg.Done()
			m.loop(l)
		}()
	}
	go func() { // ends when every loop has: closes done so Accept stops waiting
		m.wg.Wait()
		close(m.done)
	}()
	return m
}

type merged struct {
	ls        []net.Listener
	conns     chan net.Conn
	closing   chan struct{}
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	errMu     sync.Mutex
	err       error
}

func (m *merged) loop(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			m.errMu.Lock()
			if m.err == nil {
				m.err = err
			}
			m.errMu.Unlock()
			return
		}
		select {
		case m.conns <- c:
		case <-m.closing:
			c.Close()
			return
		}
	}
}

func (m *merged) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.closing:
		return nil, net.ErrClosed
	case <-m.done:
		m.errMu.Lock()
		defer m.errMu.Unlock()
		return nil, m.err
	}
}

func (m *merged) Close() error {
	var err error
	m.closeOnce.Do(func() {
		close(m.closing)
		for _, l := range m.ls {
			if e := l.Close(); e != nil && err == nil {
				err = e
			}
		}
		<-m.done
	})
	return err
}

func (m *merged) Addr() net.Addr { return m.ls[0].Addr() }

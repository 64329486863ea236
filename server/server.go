package server

import (
	"context"
	"errors"
	"github.com/corral/corral/internal/lograte"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral/corral/audit"
	"github.com/corral/corral/router"
	"github.com/corral/corral/sasl"
	"github.com/corral/corral/session"
	"github.com/corral/corral/watchhub"
)

// Options configure the client port.
type Options struct {
	ServerID        uint64
	MaxBuffer       int // jute.maxbuffer
	MinTimeout      time.Duration
	MaxTimeout      time.Duration
	MaxClientCnxns  int // per client IP; 0 = unlimited
	FourLetterWords map[string]bool
	SuperDigest     string // "super:<base64 sha1>"
	ExtendedTypes   bool

	Router   *router.Router
	Sessions *session.Manager
	Hub      *watchhub.Hub
	// Sync makes this server's replica of a shard catch up with everything committed before the
	// call (ReadIndex). The sync opcode and reconnects with a newer lastZxidSeen use it.
	Sync func(ctx context.Context, shardID uint64) error
	// Info returns facts for four-letter words (mode, per-shard leaders, ...).
	Info    func() Info
	Metrics *Metrics
	Log     *slog.Logger
	// MaxOutput is the largest number of queued, unsent bytes a connection may have before it
	// is closed as a slow reader (default 64 MiB).
	MaxOutput int
	// MaxReadAge bounds the staleness of reads: a read of a shard whose local replica has not
	// confirmed for this long that it holds everything the shard committed (a catch-up round,
	// router.Shard.Age) first catches up, and the connection closes if it cannot. ZooKeeper's
	// bound is syncLimit × tickTime, and so is Corral's default (cluster). 0: no bound.
	MaxReadAge time.Duration
	// OutstandingLimit is ZooKeeper's globalOutstandingLimit: while this many requests are read
	// and unanswered, a connection with a request outstanding reads no more (default 1000,
	// negative: no limit). See throttle.go.
	OutstandingLimit int
	// ReadOnly, when set, reports whether the server has lost its quorum and is in read-only
	// mode (readonlymode.enabled): it then serves only read-only clients (readonly.go).
	ReadOnly func() bool
	// MetaCutOff, when set, reports whether the local replica of the session table is cut off
	// from its quorum (no confirmation for MaxReadAge, and no leader it knows of): a handshake
	// then gets only a short attempt at the session table before its connection closes
	// (stuck.go).
	MetaCutOff func() bool
	// Leaderless, when set, reports whether this server's replica of a data shard knows of no
	// leader (it is campaigning): with no confirmation for MaxReadAge, requests on it close
	// their connection soon (stuck.go).
	Leaderless func(shardID uint64) bool
	// SASL is the SASL server and the authentication enforcement (sasl.go); nil: none, and sasl
	// packets are answered as by a ZooKeeper without a JAAS Server section.
	SASL *sasl.Auth
	// Audit, when set, receives an audit line for every audited write answered on this server
	// (audit.go); its owner closes it after Close.
	Audit *audit.Log
}

// Info is what four-letter words report about the server.
type Info struct {
	Mode       string // "leader", "follower" or "standalone" (leader of the meta shard = leader)
	Config     string // conf output
	NodeCount  int
	DataSize   int64
	Ensemble   int
	ShardLines []string
}

// Server serves ZooKeeper clients on one listener.
type Server struct {
	o       Options
	started time.Time
	nextID  atomic.Uint64
	stats   stats
	gate    throttle
	// badLog keeps the lines about misbehaving clients (bad input, failed authentication) to
	// one per reason and client address every badLogEvery (badclient.go).
	badLog *lograte.Limiter

	mu struct {
		sync.Mutex
		ln     net.Listener
		conns  map[*conn]struct{}
		bySess map[int64]*conn
		perIP  map[string]int
		// roSessions and roConns are the read-only sessions local to this server and their
		// connections (readonly.go).
		roSessions map[int64]roSession
		roConns    map[int64]*conn
		closed     bool
		// stopWatchdog stops the lease watchdog (lease.go) that the first Serve starts.
		stopWatchdog    chan struct{}
		watchdogStarted bool
	}
	wg sync.WaitGroup
	// binds counts bindSession calls: the watchdog scans again after one (lease.go).
	binds atomic.Uint64
}

// New returns a server; call Serve.
func New(o Options) *Server {
	if o.MaxBuffer <= 0 {
		o.MaxBuffer = 0xfffff
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = 64 << 20
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	if o.OutstandingLimit == 0 {
		o.OutstandingLimit = 1000
	}
	s := &Server{o: o, started: time.Now(), badLog: lograte.New(badLogEvery, badLogBurst, badLogKeys)}
	s.gate.limit = int64(o.OutstandingLimit)
	s.mu.conns = map[*conn]struct{}{}
	s.mu.bySess = map[int64]*conn{}
	s.mu.perIP = map[string]int{}
	s.mu.roSessions = map[int64]roSession{}
	s.mu.roConns = map[int64]*conn{}
	s.stats.minLatency.Store(-1)
	return s
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("server: closed")

// Serve accepts connections on ln until Close. It returns ErrClosed after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	s.mu.ln = ln
	if s.mu.stopWatchdog == nil && !s.mu.watchdogStarted && s.o.Sessions != nil {
		s.mu.watchdogStarted = true
		s.mu.stopWatchdog = make(chan struct{})
		s.wg.Add(1)
		go func(stop <-chan struct{}) {
			defer s.wg.Done()
			s.watchdog(stop)
		}(s.mu.stopWatchdog)
	}
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.mu.closed
			s.mu.Unlock()
			if closed {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
		if !s.admit(nc) {
			continue
		}
		c := newConn(s, nc)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.serve()
		}()
	}
}

// admit enforces maxClientCnxns per client address.
func (s *Server) admit(nc net.Conn) bool {
	ip := remoteIP(nc)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		nc.Close()
		return false
	}
	if s.o.MaxClientCnxns > 0 && s.mu.perIP[ip] >= s.o.MaxClientCnxns {
		s.o.Log.Warn("too many connections from client, closing", "ip", ip, "max", s.o.MaxClientCnxns)
		nc.Close()
		return false
	}
	s.mu.perIP[ip]++
	return true
}

func (s *Server) track(c *conn) {
	s.mu.Lock()
	s.mu.conns[c] = struct{}{}
	s.mu.Unlock()
	s.o.Metrics.connections.Inc()
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	if _, ok := s.mu.conns[c]; ok {
		delete(s.mu.conns, c)
		s.o.Metrics.connections.Dec()
	}
	if c.readOnly && s.mu.roConns[c.sessionID] == c {
		delete(s.mu.roConns, c.sessionID)
	}
	if !c.readOnly && s.mu.bySess[c.sessionID] == c {
		delete(s.mu.bySess, c.sessionID)
		if s.o.Sessions != nil {
			s.o.Sessions.Forget(c.sessionID)
		}
	}
	ip := c.ip
	if s.mu.perIP[ip]--; s.mu.perIP[ip] <= 0 {
		delete(s.mu.perIP, ip)
	}
	s.mu.Unlock()
}

// bindSession makes c the session's connection on this server, closing an older one.
func (s *Server) bindSession(c *conn) {
	s.mu.Lock()
	old := s.mu.bySess[c.sessionID]
	s.mu.bySess[c.sessionID] = c
	s.mu.Unlock()
	s.binds.Add(1)
	if old != nil && old != c {
		old.close("session moved to a newer connection")
	}
}

// SessionChanged reacts to session table changes: a closed session's connection, or one whose
// session moved to another server, is closed. Called from the session table's apply; it must
// not block.
func (s *Server) SessionChanged(id int64, closing bool, owner uint64) {
	if !closing && owner == s.o.ServerID {
		return
	}
	s.mu.Lock()
	c := s.mu.bySess[id]
	s.mu.Unlock()
	if c == nil || (closing && c.closingSession.Load()) {
		return
	}
	if closing {
		go c.close("session closed or expired")
	} else {
		go c.close("session moved to another server")
	}
}

// Close stops accepting, closes every connection and waits for their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.mu.closed = true
	if s.mu.stopWatchdog != nil {
		close(s.mu.stopWatchdog)
		s.mu.stopWatchdog = nil
	}
	ln := s.mu.ln
	conns := make([]*conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for _, c := range conns {
		c.close("server shutting down")
	}
	s.wg.Wait()
	return nil
}

// Addr returns the listener's address (nil before Serve).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ln == nil {
		return nil
	}
	return s.mu.ln.Addr()
}

func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// stats are the counters the four-letter words show.
type stats struct {
	received   atomic.Int64
	sent       atomic.Int64
	minLatency atomic.Int64 // ms; -1 until the first request
	maxLatency atomic.Int64
	sumLatency atomic.Int64
	count      atomic.Int64
	rerouted   atomic.Int64 // writes proposed again after their shard sent them back (a move)
}

// ReroutedWrites returns how many writes were proposed again on another shard (or with a
// higher MinZxid) because their shard had moved their subtree away or they predated a move.
func (s *Server) ReroutedWrites() int64 { return s.stats.rerouted.Load() }

func (st *stats) observe(d time.Duration) {
	ms := d.Milliseconds()
	st.count.Add(1)
	st.sumLatency.Add(ms)
	for {
		cur := st.maxLatency.Load()
		if ms <= cur || st.maxLatency.CompareAndSwap(cur, ms) {
			break
		}
	}
	for {
		cur := st.minLatency.Load()
		if (cur != -1 && ms >= cur) || st.minLatency.CompareAndSwap(cur, ms) {
			break
		}
	}
}

package cluster

// The client port: the protocol server (package server) over this node's router and sessions,
// and what it reports about the node (srvr, conf).

import (
	"errors"
	"fmt"
	"strings"

	"github.com/corral/corral/audit"
	"github.com/corral/corral/server"
)

func (s *Node) startClientPort() error {
	ln, err := s.listenClients()
	if err != nil {
		return err
	}
	s.ln = ln
	if s.cfg.Audit {
		if s.audit, err = audit.Open(s.cfg.AuditPath(), s.log); err != nil {
			ln.Close()
			return fmt.Errorf("cluster: %w", err)
		}
		s.auditApply.Store(s.audit)
	}
	s.client = server.New(server.Options{
		ServerID: s.cfg.MyID, MaxBuffer: s.cfg.MaxBuffer, MinTimeout: s.cfg.MinSessionTimeout,
		MaxTimeout: s.cfg.MaxSessionTimeout, MaxClientCnxns: s.cfg.MaxClientCnxns,
		FourLetterWords: s.cfg.FourLetterWords, SuperDigest: superID(s.cfg.SuperDigest),
		ExtendedTypes: s.cfg.ExtendedTypes, Router: s.router, Sessions: s.sessions, Hub: s.hub,
		Sync: s.Sync, Info: s.info, Metrics: server.NewMetrics(s.reg), Log: s.log,
		OutstandingLimit: s.cfg.GlobalOutstandingLimit,
		MaxReadAge:       s.maxReadAge(),
		ReadOnly:         s.readOnly,
		MetaCutOff:       s.metaCutOff,
		Leaderless:       s.leaderless,
		SASL:             s.cfg.SASLAuth,
		Audit:            s.audit,
	})
	s.srvPtr.Store(s.client)
	return nil
}

// serveClients starts answering on the client port that startClientPort opened. Start calls it
// last, once the admin port listens, so that a server that answers a client (ruok included)
// also answers on its admin port: scripts and tests wait for ruok and then ask /shards.
func (s *Node) serveClients() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.client.Serve(s.ln); err != nil && !errors.Is(err, server.ErrClosed) {
			s.log.Error("client port stopped", "err", err)
		}
	}()
}

// superID turns "super:<digest>" into the digest id clients authenticate as.
func superID(v string) string { return strings.TrimSpace(v) }

func (s *Node) info() server.Info {
	mode := "follower"
	if len(s.cfg.AllPeers()) == 1 {
		mode = "standalone"
	} else if s.cfg.Observer() {
		mode = "observer"
	} else if (metaRaft{s}).IsLeader() {
		mode = "leader"
	}
	var size int64
	var lines []string
	for _, sh := range s.router.Shards() {
		if v := sh.View(); v != nil {
			size += v.ApproximateDataSize() // walks every node: srvr and mntr only, not scrapes
		}
		lid, term, ok, _ := s.nh.GetLeaderID(sh.ID)
		lines = append(lines, fmt.Sprintf("corral_shard_leader{shard=\"%d\"}\t%d\ncorral_shard_term{shard=\"%d\"}\t%d\ncorral_shard_has_leader{shard=\"%d\"}\t%v",
			sh.ID, lid, sh.ID, term, sh.ID, ok))
	}
	return server.Info{Mode: mode, Config: s.confText(), NodeCount: s.nodeCount(), DataSize: size, Ensemble: len(s.cfg.AllPeers()), ShardLines: lines}
}

// nodeCount is ZooKeeper's node count over this server's replicas of every shard.
func (s *Node) nodeCount() int {
	nodes := 0
	for _, sh := range s.router.Shards() {
		if v := sh.View(); v != nil {
			nodes += v.Len() // every znode this shard serves (a top-level node's stub on the root shard is not one)
			if _, ok := v.Get("/"); ok {
				// ZooKeeper's DataTree holds the root under two names ("" and "/"), and its
				// node count (srvr, mntr) counts both.
				nodes++
			}
		}
	}
	return nodes
}

func (s *Node) confText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "clientPort=%d\n", s.cfg.ClientPort)
	if s.cfg.TLS.Enabled() {
		fmt.Fprintf(&b, "secureClientPort=%d\n", s.cfg.TLS.SecurePort)
	}
	fmt.Fprintf(&b, "dataDir=%s\n", s.cfg.DataDir)
	fmt.Fprintf(&b, "tickTime=%d\n", s.cfg.TickTime.Milliseconds())
	fmt.Fprintf(&b, "maxClientCnxns=%d\n", s.cfg.MaxClientCnxns)
	fmt.Fprintf(&b, "minSessionTimeout=%d\n", s.cfg.MinSessionTimeout.Milliseconds())
	fmt.Fprintf(&b, "maxSessionTimeout=%d\n", s.cfg.MaxSessionTimeout.Milliseconds())
	fmt.Fprintf(&b, "serverId=%d\n", s.cfg.MyID)
	fmt.Fprintf(&b, "corral.shards=%d\n", s.cfg.Shards)
	for _, p := range s.cfg.Peers {
		fmt.Fprintf(&b, "server.%d=%s:%d:%d\n", p.ID, p.Host, p.PeerPort, p.ElectionPort)
	}
	return b.String()
}

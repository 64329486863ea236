package cluster

import (
	"bufio"
	"fmt"
	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/internal/testknobs"
	"github.com/corral/corral/router"
	"github.com/corral/corral/sasl"
	"github.com/corral/corral/tlsconf"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Peer is one server.N line of zoo.cfg.
type Peer struct {
	ID           uint64
	Host         string
	PeerPort     int // carries Raft
	ElectionPort int // accepted for compatibility; unused
	ClientAddr   string
	// Observer marks a ZooKeeper observer (server.N=host:peer:election:observer): it runs a
	// non-voting replica of every shard (membership.go).
	Observer bool
}

// RaftAddress is the host:port that carries this peer's Raft traffic.
func (p Peer) RaftAddress() string { return net.JoinHostPort(p.Host, strconv.Itoa(p.PeerPort)) }

// Config is a server's configuration: the zoo.cfg keys Corral understands plus its own corral.* keys.
type Config struct {
	TickTime          time.Duration
	InitLimit         int
	SyncLimit         int
	DataDir           string
	DataLogDir        string
	ClientPort        int
	ClientPortAddress string
	MaxClientCnxns    int
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// FourLetterWords is the whitelist (4lw.commands.whitelist); "*" allows all.
	FourLetterWords map[string]bool
	AdminPort       int // admin.serverPort; 0 disables the HTTP admin server
	AdminAddress    string
	MyID            uint64
	Peers           []Peer
	// PeerType is ZooKeeper's peerType key: "observer" makes this server an observer even if
	// its own server.N line does not say so.
	PeerType string
	// Join (corral.join=true) starts every replica of a server that was never started before
	// as a joining replica with no initial members: the server is being added to a running
	// ensemble (POST /members/add on a member). Observers always join.
	Join          bool
	SuperDigest   string // zookeeper.DigestAuthenticationProvider.superDigest / corral.superDigest
	ExtendedTypes bool   // zookeeper.extendedTypesEnabled: TTL nodes
	// ReadOnlyMode (readonlymode.enabled): a server that has lost its quorum serves read-only
	// clients (server/readonly.go) instead of refusing every client.
	ReadOnlyMode bool
	// Placement spreads top-level znodes over the data shards (corral.placement: hash, the
	// default, or single: everything on the root shard).
	Placement router.Placement
	// Mounts are explicit mounts (corral.mount.<path>=<data shard id>): the subtree at path lives
	// on that shard whatever the placement. Identical on every server and fixed at first start.
	Mounts    []router.Mount
	MaxBuffer int // jute.maxbuffer
	// GlobalOutstandingLimit: requests read and not yet answered above which connections with
	// a request outstanding stop reading (ZooKeeper's key; default 1000, negative: no limit).
	GlobalOutstandingLimit int

	// AdminAuth says who may use the admin port (corral.admin.*, admin.needClientAuth;
	// package adminauth).
	AdminAuth adminauth.Settings

	// Corral's own keys.
	Shards int           // corral.shards: number of data shards
	RTT    time.Duration // corral.rttMs: Raft logical clock tick
	// ElectionTimeout (corral.electionMs) is how long a follower waits without hearing its
	// leader before it campaigns (randomized up to twice that); HeartbeatInterval
	// (corral.heartbeatMs) how often an idle leader tells its followers it is alive. Both are
	// whole ticks of RTT (raftTicks; docs/design.md §15).
	ElectionTimeout   time.Duration
	HeartbeatInterval time.Duration
	ContainerCheck    time.Duration // znode.container.checkIntervalMs
	SnapshotEntries   uint64        // corral.snapshotEntries: Raft entries between snapshots
	// SyncDirtyZnodes (corral.syncDirtyZnodes) asks for a data replica's state sync as soon as
	// it holds that many changed znodes not yet written to its store, whatever the entry count;
	// 0 leaves syncs to SnapshotEntries alone (syncdirty.go).
	SyncDirtyZnodes uint64
	// RaftQueueBytes bounds each Raft send queue (per peer connection) and receive queue (per
	// replica) in bytes (corral.raftQueueBytes). dragonboat's default is no bound: the queues
	// to a slow or restarted peer then grow with the write load. A message over the bound is
	// dropped and Raft sends it again after the follower rejects or probes.
	RaftQueueBytes uint64
	// RaftMessageBytes bounds the entry bytes of one Raft replication message
	// (corral.raftMessageBytes; dragonboat's own bound is 64 MiB). See raftmsg.go.
	RaftMessageBytes uint64
	// RaftTailBytes bounds the newest Raft log entries the server keeps in memory, over all its
	// replicas, for a leader's catch-up reads (corral.raftTailBytes; logcache.go): a fixed
	// cost, whatever the number of shards or znodes.
	RaftTailBytes uint64
	// CheckQuorum makes a Raft leader step down when it has not heard from a quorum for an
	// election timeout (corral.checkQuorum; default true, docs/design.md §15).
	CheckQuorum bool
	// LeadersFollowWrites lets a server that proposes nearly all of a data shard's writes take
	// over the shard's leadership (corral.leadersFollowWrites; default true, follow.go,
	// docs/design.md §15).
	LeadersFollowWrites bool
	// Audit turns the audit log on (audit.enable; docs/operations.md, "Audit log"); AuditFile is
	// its file (corral.audit.file; AuditPath gives the default); auditSet: audit.enable was given
	// (it wins over SERVER_JVMFLAGS).
	Audit     bool
	AuditFile string
	auditSet  bool
	// EnforceQuota is zookeeper.enforceQuota (enforceQuota in zoo.cfg, or
	// -Dzookeeper.enforceQuota in SERVER_JVMFLAGS; quota.go): writes past a hard quota fail
	// with QUOTAEXCEEDED. enforceQuotaSet: zoo.cfg gave it.
	EnforceQuota    bool
	enforceQuotaSet bool
	// SASL holds the SASL and authentication-enforcement settings (zoo.cfg keys, with or
	// without "zookeeper.", and -D flags in SERVER_JVMFLAGS; package sasl); SASLAuth is their
	// loaded form, set by LoadConfig.
	SASL     sasl.Config
	SASLAuth *sasl.Auth
	// TLS is the secure client port (secureClientPort, ssl.*; package tlsconf).
	TLS tlsconf.Settings
	// QuorumTLS is TLS between servers (sslQuorum, ssl.quorum.*; tlsconf/quorum.go); its stores
	// also serve the admin port with admin.forceHttps, as in ZooKeeper.
	QuorumTLS            tlsconf.Settings
	clientPortSet        bool     // clientPort was given (with only secureClientPort, no plaintext port)
	Unknown              []string // keys not understood (warned about)
	SourcePath           string
	ReplicaCountPerShard int

	// testing holds what only tests and benchmarks ask for (SetTestingKnobs); never from zoo.cfg.
	testing testknobs.Knobs
}

// testingKeyPrefix starts test-only key names (corral.testing.applyDelay, ...): zoo.cfg sets no
// test knobs, so such a key is unknown, ignored with a warning that says where test knobs come
// from instead.
const testingKeyPrefix = "corral.testing."

// DefaultFourLetterWords is ZooKeeper's default whitelist.
var DefaultFourLetterWords = map[string]bool{"srvr": true}

// DefaultConfig returns the defaults ZooKeeper uses where a key is absent.
func DefaultConfig() Config {
	return Config{
		TickTime:            2000 * time.Millisecond,
		InitLimit:           10,
		SyncLimit:           5,
		ClientPort:          2181,
		MaxClientCnxns:      60,
		FourLetterWords:     DefaultFourLetterWords,
		MaxBuffer:           0xfffff,
		Shards:              4,
		Placement:           router.PlaceHash,
		RTT:                 25 * time.Millisecond,
		ElectionTimeout:     200 * time.Millisecond,
		HeartbeatInterval:   50 * time.Millisecond,
		ContainerCheck:      60 * time.Second,
		SnapshotEntries:     20000,
		SyncDirtyZnodes:     8192,
		RaftQueueBytes:      64 << 20,
		RaftMessageBytes:    1 << 20,
		RaftTailBytes:       tailBudget,
		CheckQuorum:         true,
		LeadersFollowWrites: true,
		TLS:                 tlsconf.Defaults(),
		QuorumTLS:           tlsconf.QuorumDefaults(),
	}
}

// LoadConfig reads a zoo.cfg file and the myid file in its dataDir.
func LoadConfig(path string, log *slog.Logger) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("cluster: open config: %w", err)
	}
	defer f.Close()
	cfg, err := ParseConfig(f)
	if err != nil {
		return Config{}, fmt.Errorf("cluster: %s: %w", path, err)
	}
	cfg.SourcePath = path
	if cfg.DataDir != "" && !filepath.IsAbs(cfg.DataDir) {
		cfg.DataDir = filepath.Join(filepath.Dir(path), cfg.DataDir)
	}
	if cfg.DataLogDir != "" && !filepath.IsAbs(cfg.DataLogDir) {
		cfg.DataLogDir = filepath.Join(filepath.Dir(path), cfg.DataLogDir)
	}
	if err := cfg.loadMyID(); err != nil {
		return Config{}, err
	}
	if err := cfg.loadSASL(path, log); err != nil {
		return Config{}, err
	}
	cfg.loadAudit(path, os.Getenv("SERVER_JVMFLAGS"))
	if err := cfg.loadTestingKnobs(log); err != nil {
		return Config{}, fmt.Errorf("cluster: %w", err)
	}
	cfg.loadEnforceQuota(os.Getenv("SERVER_JVMFLAGS"))
	for _, k := range cfg.Unknown {
		if log == nil {
			continue
		}
		if strings.HasPrefix(k, testingKeyPrefix) {
			log.Warn("test-only configuration key ignored: zoo.cfg sets no test knobs (a binary built with -tags corraltesting reads them from its environment)", "key", k, "file", path)
		} else {
			log.Warn("unknown configuration key ignored", "key", k, "file", path)
		}
	}
	return cfg, cfg.Validate()
}

func (c *Config) loadMyID() error {
	if c.MyID != 0 {
		return nil
	}
	if len(c.Peers) == 0 {
		c.MyID = 1 // standalone
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.DataDir, "myid"))
	if err != nil {
		return fmt.Errorf("cluster: %w (the myid file names this server among server.N)", err)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return fmt.Errorf("cluster: myid %q is not a number", strings.TrimSpace(string(b)))
	}
	c.MyID = id
	return nil
}

// loadSASL applies SERVER_JVMFLAGS's -D flags (what zkServer.sh passes to Java) under the
// zoo.cfg keys, resolves a relative corral.jaasConfig or corral.krb5Conf against the zoo.cfg
// directory and loads the JAAS file.
func (c *Config) loadSASL(path string, log *slog.Logger) error {
	if f := c.SASL.JAASFile; f != "" && !filepath.IsAbs(f) {
		c.SASL.JAASFile = filepath.Join(filepath.Dir(path), f)
	}
	if f := c.SASL.Krb5Conf; f != "" && !filepath.IsAbs(f) {
		c.SASL.Krb5Conf = filepath.Join(filepath.Dir(path), f)
	}
	if err := c.SASL.ApplyJVMFlags(os.Getenv("SERVER_JVMFLAGS")); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	a, err := c.SASL.Load(log)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	c.SASLAuth = a
	return nil
}

// ParseConfig parses zoo.cfg text (Java properties: key=value, # comments).
func ParseConfig(r io.Reader) (Config, error) {
	cfg := DefaultConfig()
	var minST, maxST time.Duration
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' || s[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			if k2, v2, ok2 := strings.Cut(s, ":"); ok2 {
				k, v = k2, v2
			} else {
				return cfg, fmt.Errorf("line %d: %q is not key=value", line, s)
			}
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if err := cfg.set(k, v, &minST, &maxST); err != nil {
			return cfg, fmt.Errorf("line %d: %s: %w", line, k, err)
		}
	}
	if err := sc.Err(); err != nil {
		return cfg, err
	}
	sort.Slice(cfg.Peers, func(i, j int) bool { return cfg.Peers[i].ID < cfg.Peers[j].ID })
	if cfg.TLS.Enabled() && !cfg.clientPortSet {
		cfg.ClientPort = 0 // secureClientPort alone: no plaintext port, as in ZooKeeper
	}
	cfg.MinSessionTimeout, cfg.MaxSessionTimeout = 2*cfg.TickTime, 20*cfg.TickTime
	if minST > 0 {
		cfg.MinSessionTimeout = minST
	}
	if maxST > 0 {
		cfg.MaxSessionTimeout = maxST
	}
	return cfg, nil
}

func (c *Config) set(k, v string, minST, maxST *time.Duration) error {
	atoi := func() (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", v)
		}
		return n, nil
	}
	ms := func() (time.Duration, error) {
		n, err := atoi()
		return time.Duration(n) * time.Millisecond, err
	}
	atLeast := func(min int) (uint64, error) {
		n, err := atoi()
		if err == nil && n < min {
			err = fmt.Errorf("%d is below the minimum of %d", n, min)
		}
		return uint64(n), err
	}
	var err error
	switch {
	case k == "tickTime":
		c.TickTime, err = ms()
	case k == "initLimit":
		c.InitLimit, err = atoi()
	case k == "syncLimit":
		c.SyncLimit, err = atoi()
	case k == "dataDir":
		c.DataDir = v
	case k == "dataLogDir":
		c.DataLogDir = v
	case k == "clientPort":
		c.ClientPort, err = atoi()
		c.clientPortSet = true
	case k == "clientPortAddress":
		c.ClientPortAddress = v
	case k == "globalOutstandingLimit":
		c.GlobalOutstandingLimit, err = atoi()
	case k == "maxClientCnxns":
		c.MaxClientCnxns, err = atoi()
	case k == "minSessionTimeout":
		*minST, err = ms()
	case k == "maxSessionTimeout":
		*maxST, err = ms()
	case k == "4lw.commands.whitelist":
		c.FourLetterWords = map[string]bool{}
		for _, w := range strings.Split(v, ",") {
			if w = strings.TrimSpace(w); w != "" {
				c.FourLetterWords[w] = true
			}
		}
	case k == "admin.serverPort":
		c.AdminPort, err = atoi()
	case k == "admin.serverAddress":
		c.AdminAddress = v
	case k == "admin.enableServer":
		if v == "false" {
			c.AdminPort = -1
		}
	case k == "jute.maxbuffer":
		c.MaxBuffer, err = atoi()
	case k == "readonlymode.enabled" || k == "zookeeper.readonlymode.enabled":
		c.ReadOnlyMode, err = strconv.ParseBool(v)
	case k == "zookeeper.extendedTypesEnabled" || k == "extendedTypesEnabled" || k == "corral.extendedTypes":
		c.ExtendedTypes = v == "true"
	case k == "zookeeper.DigestAuthenticationProvider.superDigest" || k == "corral.superDigest":
		c.SuperDigest = v
	case k == "audit.enable" || k == "zookeeper.audit.enable":
		c.Audit, c.auditSet = strings.EqualFold(v, "true"), true // Boolean.getBoolean
	case k == "enforceQuota" || k == "zookeeper.enforceQuota":
		c.EnforceQuota, c.enforceQuotaSet = strings.EqualFold(v, "true"), true // Boolean.parseBoolean
	case k == "corral.audit.file":
		c.AuditFile = v
	case k == "znode.container.checkIntervalMs":
		c.ContainerCheck, err = ms()
	case k == "corral.shards":
		c.Shards, err = atoi()
	case k == "peerType":
		if v != "observer" && v != "participant" {
			err = fmt.Errorf("%q: want observer or participant", v)
		}
		c.PeerType = v
	case k == "corral.join":
		c.Join, err = strconv.ParseBool(v)
	case strings.HasPrefix(k, "corral.mount."):
		path := strings.TrimPrefix(k, "corral.mount.")
		if why := router.ValidMount(path); why != "" {
			err = fmt.Errorf("mount point %q: %s", path, why)
			break
		}
		var id uint64
		id, err = strconv.ParseUint(v, 10, 64)
		if err == nil {
			c.Mounts = append(c.Mounts, router.Mount{Path: path, ShardID: id})
		}
	case k == "corral.placement":
		p, ok := router.ParsePlacement(v)
		if !ok {
			err = fmt.Errorf("want hash or single")
		}
		c.Placement = p
	case k == "corral.snapshotEntries":
		c.SnapshotEntries, err = atLeast(10)
	case k == "corral.syncDirtyZnodes":
		c.SyncDirtyZnodes, err = atLeast(0)
	case k == "corral.raftQueueBytes":
		c.RaftQueueBytes, err = atLeast(1 << 20)
	case k == "corral.raftMessageBytes":
		c.RaftMessageBytes, err = atLeast(64 << 10)
	case k == "corral.raftTailBytes":
		c.RaftTailBytes, err = atLeast(0)
	case k == "corral.rttMs":
		c.RTT, err = ms()
	case k == "corral.electionMs":
		c.ElectionTimeout, err = ms()
	case k == "corral.heartbeatMs":
		c.HeartbeatInterval, err = ms()
	case k == "corral.checkQuorum":
		c.CheckQuorum, err = strconv.ParseBool(v)
	case k == "corral.leadersFollowWrites":
		c.LeadersFollowWrites, err = strconv.ParseBool(v)
	case k == "corral.ssl.reloadIntervalMs" || k == "corral.ssl.handshakeTimeoutMs":
		// Timing of both the secure client port's TLS and the quorum's.
		if _, err = c.TLS.Set(k, v); err == nil {
			_, err = c.QuorumTLS.Set(k, v)
		}
	case sasl.IsKey(k):
		err = c.SASL.Set(k, v)
	case strings.HasPrefix(k, "server."):
		p, perr := parsePeer(strings.TrimPrefix(k, "server."), v)
		if perr != nil {
			return perr
		}
		c.Peers = append(c.Peers, p)
	case k == "standaloneEnabled", k == "reconfigEnabled", k == "autopurge.snapRetainCount",
		k == "autopurge.purgeInterval", k == "preAllocSize", k == "snapCount", k == "syncEnabled",
		k == "electionAlg", k == "quorumListenOnAllIPs",
		k == "admin.enableServer", k == "metricsProvider.className", k == "metricsProvider.httpPort":
		// Understood and not needed by Corral.
	default:
		var ok bool
		if ok, err = c.QuorumTLS.Set(k, v); !ok {
			if ok, err = c.TLS.Set(k, v); !ok {
				if ok, err = c.AdminAuth.Set(k, v); !ok {
					c.Unknown = append(c.Unknown, k)
				}
			}
		}
	}
	return err
}

// parsePeer parses "N" and "host:peer:election[:role][;[clientHost:]clientPort]".
func parsePeer(idStr, v string) (Peer, error) {
	id, err := strconv.ParseUint(idStr, 10, 64)
	if err != nil || id == 0 || id > 254 {
		return Peer{}, fmt.Errorf("server id %q must be 1..254", idStr)
	}
	addr, client, _ := strings.Cut(v, ";")
	parts := strings.Split(addr, ":")
	if len(parts) < 3 {
		return Peer{}, fmt.Errorf("%q is not host:peerPort:electionPort", v)
	}
	if len(parts) > 4 {
		return Peer{}, fmt.Errorf("%q is not host:peerPort:electionPort[:role]", v)
	}
	p := Peer{ID: id, Host: parts[0]}
	if len(parts) == 4 {
		switch parts[3] {
		case "observer":
			p.Observer = true
		case "participant":
		default:
			return Peer{}, fmt.Errorf("role %q: want observer or participant", parts[3])
		}
	}
	if p.PeerPort, err = strconv.Atoi(parts[1]); err != nil {
		return Peer{}, fmt.Errorf("peer port %q", parts[1])
	}
	if p.ElectionPort, err = strconv.Atoi(parts[2]); err != nil {
		return Peer{}, fmt.Errorf("election port %q", parts[2])
	}
	if client != "" {
		if !strings.Contains(client, ":") {
			client = net.JoinHostPort("0.0.0.0", client)
		}
		p.ClientAddr = client
	}
	return p, nil
}

// Validate checks the configuration for mistakes an operator can fix.
func (c *Config) Validate() error {
	switch {
	case c.TickTime <= 0:
		return fmt.Errorf("cluster: tickTime must be positive")
	case c.DataDir == "":
		return fmt.Errorf("cluster: dataDir is required")
	case c.ClientPort < 0 || c.ClientPort > 65535 || (c.ClientPort == 0 && !c.TLS.Enabled()):
		return fmt.Errorf("cluster: clientPort %d out of range", c.ClientPort)
	case c.Shards < 1 || c.Shards > 200:
		return fmt.Errorf("cluster: corral.shards %d must be 1..200", c.Shards)
	case c.MinSessionTimeout > c.MaxSessionTimeout:
		return fmt.Errorf("cluster: minSessionTimeout %v > maxSessionTimeout %v", c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	if err := c.validateRaftTiming(); err != nil {
		return err
	}
	if len(c.Peers) > 0 {
		found := false
		for _, p := range c.Peers {
			if p.ID == c.MyID {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("cluster: myid %d is not among the server.N lines", c.MyID)
		}
		if len(c.Participants()) == 0 {
			return fmt.Errorf("cluster: every server.N line is an observer; at least one must be a participant")
		}
	} else if c.PeerType == "observer" {
		return fmt.Errorf("cluster: peerType=observer needs server.N lines naming the participants")
	}
	if err := c.TLS.Validate(); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := c.QuorumTLS.Validate(); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := c.AdminAuth.Validate(); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	switch {
	case c.AdminAuth.ForceHTTPS && c.QuorumTLS.KeyStore.Location == "":
		return fmt.Errorf("cluster: admin.forceHttps=true needs ssl.quorum.keyStore.location (the admin port's certificate, as in ZooKeeper)")
	case c.AdminAuth.PortUnification && c.QuorumTLS.KeyStore.Location == "":
		return fmt.Errorf("cluster: admin.portUnification=true needs ssl.quorum.keyStore.location (the admin port's certificate, as in ZooKeeper)")
	case c.AdminAuth.NeedClientAuth && c.QuorumTLS.TrustStore.Location == "":
		return fmt.Errorf("cluster: admin.needClientAuth=true needs ssl.quorum.trustStore.location (the CAs admin client certificates are checked against)")
	}
	return nil
}

// Observer reports whether this server is an observer (peerType=observer, or its own
// server.N line ends in :observer).
func (c *Config) Observer() bool { return c.PeerType == "observer" || c.Self().Observer }

// Participants returns the server.N lines that are not observers: the voting members a new
// ensemble starts with (just Self when standalone).
func (c *Config) Participants() []Peer {
	var out []Peer
	for _, p := range c.AllPeers() {
		if !p.Observer {
			out = append(out, p)
		}
	}
	return out
}

// Self returns this server's peer entry (a synthetic one when standalone).
func (c *Config) Self() Peer {
	for _, p := range c.Peers {
		if p.ID == c.MyID {
			return p
		}
	}
	port := c.ClientPort
	if port == 0 {
		port = c.TLS.SecurePort // secureClientPort alone
	}
	return Peer{ID: c.MyID, Host: "127.0.0.1", PeerPort: port + 10000}
}

// AllPeers returns the server.N lines, observers included (just Self when standalone). They
// are the servers this one knew of at its first start; servers added or removed online are not
// among them (the shards' Raft membership is the truth, see membership.go).
func (c *Config) AllPeers() []Peer {
	if len(c.Peers) == 0 {
		return []Peer{c.Self()}
	}
	return c.Peers
}

// ClientListenAddr is the address the client port binds.
func (c *Config) ClientListenAddr() string {
	return net.JoinHostPort(c.ClientPortAddress, strconv.Itoa(c.ClientPort))
}

// SetTestingKnobs gives the server behaviours only tests and benchmarks ask for (package
// internal/testknobs, whose type only code inside this module can name). zoo.cfg never sets
// them; a binary built with -tags corraltesting reads them from its environment in LoadConfig.
func (c *Config) SetTestingKnobs(k testknobs.Knobs) { c.testing = k }

// loadAudit applies -Dzookeeper.audit.enable from SERVER_JVMFLAGS unless zoo.cfg set audit.enable,
// and resolves a relative corral.audit.file against the zoo.cfg directory.
func (c *Config) loadAudit(path, jvmFlags string) {
	if !c.auditSet {
		for _, a := range strings.Fields(jvmFlags) {
			if v, ok := strings.CutPrefix(a, "-Dzookeeper.audit.enable="); ok {
				c.Audit = strings.EqualFold(strings.Trim(v, `"'`), "true")
			}
		}
	}
	if c.AuditFile != "" && !filepath.IsAbs(c.AuditFile) {
		c.AuditFile = filepath.Join(filepath.Dir(path), c.AuditFile)
	}
}

// AuditPath is the audit log's file: corral.audit.file, or zookeeper_audit.log (the name in
// ZooKeeper's shipped logging configuration) in dataLogDir, or else in dataDir.
func (c *Config) AuditPath() string {
	if c.AuditFile != "" {
		return c.AuditFile
	}
	dir := c.DataLogDir
	if dir == "" {
		dir = c.DataDir
	}
	return filepath.Join(dir, "zookeeper_audit.log")
}

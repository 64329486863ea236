package server

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Version is the ZooKeeper version Corral reports; the build date uses the pre-3.7 format that
// go-zookeeper's srvr parser requires.
const Version = "3.8.4-corral"

const buildDate = "01/01/2026 00:00 GMT"

// fourLetterWord answers a four-letter word on a fresh connection and closes it.
func (c *conn) fourLetterWord(w string) {
	if !c.s.o.FourLetterWords["*"] && !c.s.o.FourLetterWords[w] {
		c.send([]byte(w + " is not executed because it is not in the whitelist.\n"))
		return
	}
	var out string
	switch w {
	case "ruok":
		out = "imok"
	case "srvr":
		out = c.s.srvr(false)
	case "stat":
		out = c.s.srvr(true)
	case "mntr":
		out = c.s.mntr()
	case "conf":
		out = c.s.o.Info().Config
	case "envi":
		out = c.s.envi()
	case "cons":
		out = c.s.cons()
	case "wchs":
		out = fmt.Sprintf("%d connections watching %d paths\nTotal watches:%d\n",
			c.s.o.Hub.Connections(), c.s.o.Hub.Paths(), c.s.o.Hub.Count())
	case "wchc":
		var b strings.Builder
		for id, paths := range c.s.o.Hub.ByWatcher() {
			fmt.Fprintf(&b, "0x%x\n", id)
			for _, p := range paths {
				fmt.Fprintf(&b, "\t%s\n", p)
			}
		}
		out = b.String()
	case "wchp":
		var b strings.Builder
		for p, ids := range c.s.o.Hub.ByPath() {
			fmt.Fprintf(&b, "%s\n", p)
			for _, id := range ids {
				fmt.Fprintf(&b, "\t0x%x\n", id)
			}
		}
		out = b.String()
	case "isro":
		out = "rw"
		if c.s.readOnlyNow() {
			out = "ro"
		}
	case "dump":
		out = c.s.dump()
	case "dirs":
		out = "datadir_size: 0\nlogdir_size: 0\n"
	case "srst", "crst":
		c.s.stats.received.Store(0)
		c.s.stats.sent.Store(0)
		c.s.stats.count.Store(0)
		c.s.stats.sumLatency.Store(0)
		c.s.stats.maxLatency.Store(0)
		c.s.stats.minLatency.Store(-1)
		out = "Server stats reset.\n"
		if w == "crst" {
			out = "Connection stats reset.\n"
		}
	default:
		out = w + " is not supported by this server.\n"
	}
	c.send([]byte(out))
}

func (s *Server) latency() (int64, float64, int64) {
	minL := s.stats.minLatency.Load()
	if minL < 0 {
		minL = 0
	}
	n := s.stats.count.Load()
	avg := 0.0
	if n > 0 {
		avg = float64(s.stats.sumLatency.Load()) / float64(n)
	}
	return minL, avg, s.stats.maxLatency.Load()
}

func (s *Server) srvr(withClients bool) string {
	info := s.o.Info()
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: %s, built on %s\n", Version, buildDate)
	if withClients {
		b.WriteString("Clients:\n")
		b.WriteString(s.consLines())
		b.WriteString("\n")
	}
	minL, avg, maxL := s.latency()
	fmt.Fprintf(&b, "Latency min/avg/max: %d/%.4f/%d\n", minL, avg, maxL)
	fmt.Fprintf(&b, "Received: %d\n", s.stats.received.Load())
	fmt.Fprintf(&b, "Sent: %d\n", s.stats.sent.Load())
	s.mu.Lock()
	nconns := len(s.mu.conns)
	s.mu.Unlock()
	fmt.Fprintf(&b, "Connections: %d\n", nconns)
	fmt.Fprintf(&b, "Outstanding: %d\n", s.gate.outstanding())
	fmt.Fprintf(&b, "Zxid: 0x%x\n", s.o.Router.LastZxid())
	fmt.Fprintf(&b, "Mode: %s\n", s.mode(info))
	fmt.Fprintf(&b, "Node count: %d\n", info.NodeCount)
	return b.String()
}

func (s *Server) consLines() string {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var lines []string
	for _, c := range conns {
		lines = append(lines, fmt.Sprintf(" %s[1](queued=0,recved=0,sent=0,sid=0x%x,lzxid=0x%x,to=%d)",
			c.nc.RemoteAddr().String(), c.sessionID, c.lastZxid.Load(), c.timeout.Milliseconds()))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func (s *Server) cons() string { return s.consLines() + "\n" }

func (s *Server) mntr() string {
	info := s.o.Info()
	minL, avg, maxL := s.latency()
	s.mu.Lock()
	nconns := len(s.mu.conns)
	s.mu.Unlock()
	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "zk_%s\t%v\n", k, v) }
	kv("version", Version+", built on "+buildDate)
	kv("avg_latency", fmt.Sprintf("%.4f", avg))
	kv("max_latency", maxL)
	kv("min_latency", minL)
	kv("packets_received", s.stats.received.Load())
	kv("packets_sent", s.stats.sent.Load())
	kv("num_alive_connections", nconns)
	kv("outstanding_requests", s.gate.outstanding())
	kv("server_state", s.mode(info))
	kv("znode_count", info.NodeCount)
	kv("watch_count", s.o.Hub.WatchCount())
	kv("ephemerals_count", 0)
	kv("approximate_data_size", info.DataSize)
	kv("open_file_descriptor_count", openFDs())
	kv("max_file_descriptor_count", 1048576)
	if info.Mode == "leader" {
		kv("followers", info.Ensemble-1)
		kv("synced_followers", info.Ensemble-1)
	}
	for _, l := range info.ShardLines {
		b.WriteString(l)
		b.WriteString("\n")
	}
	return b.String()
}

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

func (s *Server) envi() string {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	var b strings.Builder
	b.WriteString("Environment:\n")
	fmt.Fprintf(&b, "zookeeper.version=%s, built on %s\n", Version, buildDate)
	fmt.Fprintf(&b, "host.name=%s\n", host)
	fmt.Fprintf(&b, "go.version=%s\n", runtime.Version())
	fmt.Fprintf(&b, "os.name=%s\n", runtime.GOOS)
	fmt.Fprintf(&b, "os.arch=%s\n", runtime.GOARCH)
	fmt.Fprintf(&b, "user.dir=%s\n", wd)
	fmt.Fprintf(&b, "server.started=%s\n", s.started.Format(time.RFC3339))
	return b.String()
}

func (s *Server) dump() string {
	var b strings.Builder
	b.WriteString("SessionTracker dump:\n")
	b.WriteString("ephemeral nodes dump:\n")
	s.mu.Lock()
	for id := range s.mu.bySess {
		fmt.Fprintf(&b, "Session 0x%x\n", id)
	}
	s.mu.Unlock()
	return b.String()
}

// mode is the server's role as srvr and mntr report it: "read-only" in read-only mode.
func (s *Server) mode(info Info) string {
	if s.readOnlyNow() {
		return "read-only"
	}
	return info.Mode
}

package clustertest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral/corral/internal/testcluster"
)

// TestHealthReportsCutOff: /health answers 503, naming the shards, while the server is cut off
// from the quorum of its shards (its two peers stopped: every replica unconfirmed for
// syncLimit × tickTime and without a leader, the rule that closes its clients), and "ok" again
// once a peer is back. An operator's load balancer or Kubernetes probe must not keep sending
// clients to a server that closes them.
func TestHealthReportsCutOff(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 2, Admin: true})
	addr := cl.AdminAddr(0)
	if code, body := adminStatus(t, "GET", addr, "/health"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Fatalf("healthy ensemble: %d %q", code, body)
	}
	cl.Stop(1)
	cl.Stop(2)
	waitHealth(t, addr, http.StatusServiceUnavailable, "cut off from the quorum of shards", 30*time.Second)
	cl.Restart(1)
	waitHealth(t, addr, http.StatusOK, "ok", 30*time.Second)
}

// waitHealth polls GET /health until it answers code with a body containing want.
func waitHealth(t *testing.T, addr string, code int, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, body := adminStatus(t, "GET", addr, "/health")
		if got == code && strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health: %d %q after %v, want %d %q", got, body, within, code, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

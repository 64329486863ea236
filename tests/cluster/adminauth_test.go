package clustertest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/testcluster"
)

// lockedBuffer is a log sink several goroutines write to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// adminAs calls an admin endpoint with the Authorization header auth ("" for none).
func adminAs(t *testing.T, method, addr, pathQuery, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+pathQuery, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, pathQuery, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestAdminAuth: with corral.admin.digest set, every state-changing admin endpoint answers 401
// without credentials and 403 with wrong ones (even from loopback), and reaches its handler
// with an operator's (corral.admin.digest or superDigest, digest header or Basic); a move and a
// stats import succeed that way; reads stay open; each refusal is logged.
func TestAdminAuth(t *testing.T) {
	logs := &lockedBuffer{}
	cl := testcluster.Start(t, testcluster.Options{Servers: 1, Shards: 2, Admin: true,
		Log:   slog.New(slog.NewTextHandler(logs, nil)),
		Extra: []string{"corral.admin.digest=" + acl.Digest("op:opsecret")}})
	defer cl.Close()
	addr := cl.AdminAddr(0)

	fresh := "/fresh-auth"
	to := cluster.DataShardID(0)
	if sh := cl.Server(0).Router().Lookup(fresh); sh != nil && sh.ID == to {
		to = cluster.DataShardID(1)
	}
	move := fmt.Sprintf("/move?path=%s&shard=%d", fresh, to)
	// The state-changing endpoints; the requests that are not move and import/stats are refused
	// by their handlers (a stale expected count, a missing id): reaching the handler is the point.
	mutating := []string{move, "/import/stats", "/shards/add?expect=99", "/members/add?id=9", "/members/remove?id=0"}
	for i, p := range mutating {
		if code, body := adminAs(t, http.MethodPost, addr, p, ""); code != http.StatusUnauthorized {
			t.Errorf("%d: POST %s without credentials: %d %q, want 401", i, p, code, body)
		}
		if code, body := adminAs(t, http.MethodPost, addr, p, "digest op:wrong"); code != http.StatusForbidden {
			t.Errorf("%d: POST %s with a wrong password: %d %q, want 403", i, p, code, body)
		}
	}
	if out := logs.String(); strings.Count(out, "admin request refused") < 2*len(mutating) || !strings.Contains(out, "path=/members/remove") {
		t.Errorf("refusals not logged:\n%s", out)
	}
	if code, body := adminAs(t, http.MethodPost, addr, move, "digest op:opsecret"); code != http.StatusOK {
		t.Fatalf("POST %s as operator: %d %q", move, code, body)
	}
	// superDigest (testcluster: super:test) is an operator too, here with HTTP Basic.
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/import/stats", strings.NewReader(""))
	req.SetBasicAuth("super", "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict { // 409: format level not reached yet
		t.Errorf("POST /import/stats as super (Basic): %s", resp.Status)
	}
	for i, p := range mutating[2:] {
		code, body := adminAs(t, http.MethodPost, addr, p, "digest op:opsecret")
		if code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusOK {
			t.Errorf("%d: POST %s as operator: %d %q, want its handler's refusal", i, p, code, body)
		}
	}
	for _, p := range []string{"/metrics", "/health", "/shards", "/shards/list", "/placement", "/members"} {
		if code, body := adminAs(t, http.MethodGet, addr, p, ""); code != http.StatusOK {
			t.Errorf("GET %s without credentials: %d %q", p, code, body)
		}
	}
}

// TestAdminAuthConfig: the admin keys parse through zoo.cfg (not as unknown keys), a malformed
// digest stops parsing, and admin.needClientAuth=true stops the server at Validate.
func TestAdminAuthConfig(t *testing.T) {
	cfg, err := cluster.ParseConfig(strings.NewReader("dataDir=/tmp/x\ncorral.admin.digest=" + acl.Digest("op:pw") +
		"\ncorral.admin.readAuth=true\ncorral.admin.trustLoopback=false\nadmin.needClientAuth=false\n"))
	if err != nil || len(cfg.Unknown) != 0 || len(cfg.AdminAuth.Digests) != 1 || !cfg.AdminAuth.ReadAuth ||
		cfg.AdminAuth.TrustLoopback == nil || *cfg.AdminAuth.TrustLoopback {
		t.Fatalf("parsed: %+v, unknown %v, %v", cfg.AdminAuth, cfg.Unknown, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.ParseConfig(strings.NewReader("dataDir=/tmp/x\ncorral.admin.digest=op:pw\n")); !errors.Is(err, adminauth.ErrConfig) {
		t.Errorf("a password in place of its digest: %v", err)
	}
	cfg, err = cluster.ParseConfig(strings.NewReader("dataDir=/tmp/x\nadmin.needClientAuth=true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); !errors.Is(err, adminauth.ErrConfig) {
		t.Errorf("admin.needClientAuth=true: Validate = %v", err)
	}
}

package adminauth

import (
	"bytes"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/corral/corral/acl"
)

// mutating are the admin port's state-changing endpoints (cluster/server.go's mux).
var mutating = []string{"/move?path=/a&shard=3", "/shards/add?expect=4", "/members/add?id=4&raft=h:2888",
	"/members/remove?id=4", "/import/stats"}

// reads are its read-only endpoints.
var reads = []string{"/metrics", "/metrics/raft", "/health", "/shards", "/shards/list", "/placement", "/members", "/debug/pprof/"}

const (
	local  = "127.0.0.1:50000"
	remote = "10.1.2.3:50000"
	local6 = "[::1]:50000"
)

func guard(t *testing.T, s Settings, super string) (*Guard, *bytes.Buffer, *int) {
	t.Helper()
	var logs bytes.Buffer
	served := new(int)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { *served++; w.Write([]byte("done")) })
	return New(s, super, slog.New(slog.NewTextHandler(&logs, nil)), next), &logs, served
}

func settings(t *testing.T, kv ...string) Settings {
	t.Helper()
	var s Settings
	for i := 0; i < len(kv); i += 2 {
		if ok, err := s.Set(kv[i], kv[i+1]); !ok || err != nil {
			t.Fatalf("Set(%s, %s) = %v, %v", kv[i], kv[i+1], ok, err)
		}
	}
	return s
}

func TestGuard(t *testing.T) {
	opDigest := acl.Digest("op:opsecret")
	super := acl.Digest("super:test")
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("op:opsecret"))
	tests := []struct {
		name     string
		s        Settings
		super    string
		remote   string
		auth     string // Authorization header
		code     int    // for every mutating endpoint
		readCode int    // for every read endpoint
	}{
		// Nothing configured: loopback only.
		0: {name: "none/loopback", remote: local, code: 200, readCode: 200},
		1: {name: "none/loopback6", remote: local6, code: 200, readCode: 200},
		2: {name: "none/remote", remote: remote, code: 403, readCode: 200},
		3: {name: "none/remote with credentials", remote: remote, auth: "digest op:opsecret", code: 403, readCode: 200},
		// superDigest only: loopback still trusted, super accepted from anywhere.
		4: {name: "super/loopback", super: super, remote: local, code: 200, readCode: 200},
		5: {name: "super/remote none", super: super, remote: remote, code: 401, readCode: 200},
		6: {name: "super/remote right", super: super, remote: remote, auth: "digest super:test", code: 200, readCode: 200},
		7: {name: "super/remote wrong", super: super, remote: remote, auth: "digest super:nope", code: 403, readCode: 200},
		8: {name: "super/loopback wrong", super: super, remote: local, auth: "digest super:nope", code: 403, readCode: 200},
		// corral.admin.digest: credentials needed from everywhere.
		9:  {name: "digest/loopback none", s: settings(t, "corral.admin.digest", opDigest), remote: local, code: 401, readCode: 200},
		10: {name: "digest/remote none", s: settings(t, "corral.admin.digest", opDigest), remote: remote, code: 401, readCode: 200},
		11: {name: "digest/remote wrong", s: settings(t, "corral.admin.digest", opDigest), remote: remote, auth: "digest op:wrong", code: 403, readCode: 200},
		12: {name: "digest/remote unknown user", s: settings(t, "corral.admin.digest", opDigest), remote: remote, auth: "digest eve:opsecret", code: 403, readCode: 200},
		13: {name: "digest/remote right", s: settings(t, "corral.admin.digest", opDigest), remote: remote, auth: "digest op:opsecret", code: 200, readCode: 200},
		14: {name: "digest/remote right, scheme case", s: settings(t, "corral.admin.digest", opDigest), remote: remote, auth: "Digest op:opsecret", code: 200, readCode: 200},
		15: {name: "digest/remote basic", s: settings(t, "corral.admin.digest", opDigest), remote: remote, auth: basic, code: 200, readCode: 200},
		16: {name: "digest/remote super", s: settings(t, "corral.admin.digest", opDigest), super: super, remote: remote, auth: "digest super:test", code: 200, readCode: 200},
		17: {name: "digest/remote bearer", s: settings(t, "corral.admin.digest", opDigest), remote: remote, auth: "Bearer xyz", code: 401, readCode: 200},
		18: {name: "digest/second entry", s: settings(t, "corral.admin.digest", acl.Digest("a:b")+", "+opDigest), remote: remote, auth: "digest op:opsecret", code: 200, readCode: 200},
		19: {name: "digest+trustLoopback", s: settings(t, "corral.admin.digest", opDigest, "corral.admin.trustLoopback", "true"), remote: local, code: 200, readCode: 200},
		20: {name: "super+no trustLoopback", s: settings(t, "corral.admin.trustLoopback", "false"), super: super, remote: local, code: 401, readCode: 200},
		// corral.admin.readAuth: reads follow the same rule.
		21: {name: "readAuth/remote none", s: settings(t, "corral.admin.digest", opDigest, "corral.admin.readAuth", "true"), remote: remote, code: 401, readCode: 401},
		22: {name: "readAuth/remote right", s: settings(t, "corral.admin.digest", opDigest, "corral.admin.readAuth", "true"), remote: remote, auth: "digest op:opsecret", code: 200, readCode: 200},
		23: {name: "readAuth/none configured remote", s: settings(t, "corral.admin.readAuth", "true"), remote: remote, code: 403, readCode: 403},
		24: {name: "readAuth/none configured loopback", s: settings(t, "corral.admin.readAuth", "true"), remote: local, code: 200, readCode: 200},
	}
	for i, tt := range tests {
		g, _, served := guard(t, tt.s, tt.super)
		check := func(method, target string, want int) {
			r := httptest.NewRequest(method, target, strings.NewReader(""))
			r.RemoteAddr = tt.remote
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			before := *served
			g.ServeHTTP(w, r)
			if w.Code != want {
				t.Errorf("%d %s: %s %s: %d %q, want %d", i, tt.name, method, target, w.Code, w.Body.String(), want)
			}
			if reached := *served > before; reached != (want == 200) {
				t.Errorf("%d %s: %s %s: handler reached %v with status %d", i, tt.name, method, target, reached, w.Code)
			}
			if want == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic") {
				t.Errorf("%d %s: 401 without WWW-Authenticate", i, tt.name)
			}
		}
		for _, p := range mutating {
			check(http.MethodPost, p, tt.code)
		}
		check(http.MethodPut, "/move", tt.code)   // not a read: guarded too
		check(http.MethodGet, "/backup", tt.code) // every znode whatever its ACL: guarded as a change
		for _, p := range reads {
			check(http.MethodGet, p, tt.readCode)
		}
		check(http.MethodHead, "/health", tt.readCode)
	}
}

func TestGuardLogs(t *testing.T) {
	g, logs, _ := guard(t, settings(t, "corral.admin.digest", acl.Digest("op:opsecret")), "")
	for _, auth := range []string{"", "digest op:wrongpass"} {
		r := httptest.NewRequest(http.MethodPost, "/members/remove?id=2", nil)
		r.RemoteAddr = remote
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		g.ServeHTTP(httptest.NewRecorder(), r)
	}
	out := logs.String()
	if n := strings.Count(out, `msg="admin request refused"`); n != 2 {
		t.Fatalf("%d refusal lines, want 2:\n%s", n, out)
	}
	for _, want := range []string{"remote=" + remote, "path=/members/remove", "status=401", "status=403", "method=POST"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "wrongpass") {
		t.Errorf("the log holds the password:\n%s", out)
	}
	logs.Reset()
	r := httptest.NewRequest(http.MethodPost, "/move?path=/a&shard=3", nil)
	r.RemoteAddr = remote
	SetHeader(r, "op:opsecret")
	g.ServeHTTP(httptest.NewRecorder(), r)
	if out := logs.String(); !strings.Contains(out, `msg="admin request"`) || !strings.Contains(out, "operator=op") || strings.Contains(out, "opsecret") {
		t.Errorf("accepted request's log line: %q", out)
	}
}

func TestSettings(t *testing.T) {
	for i, tt := range []struct {
		k, v string
		ok   bool // an admin key
		err  bool
	}{
		0: {"corral.admin.digest", acl.Digest("op:pw"), true, false},
		1: {"corral.admin.digest", "op:notbase64!", true, true},
		2: {"corral.admin.digest", "op:" + base64.StdEncoding.EncodeToString([]byte("short")), true, true},
		3: {"corral.admin.digest", "op:pw", true, true},
		4: {"corral.admin.readAuth", "yes", true, true},
		5: {"corral.admin.trustLoopback", "false", true, false},
		6: {"admin.needClientAuth", "false", true, false},
		7: {"zookeeper.admin.needClientAuth", "false", true, false},
		8: {"admin.serverPort", "8080", false, false},
		9: {"corral.admin.other", "x", false, false},
	} {
		var s Settings
		ok, err := s.Set(tt.k, tt.v)
		if ok != tt.ok || (err != nil) != tt.err || (err != nil && !errors.Is(err, ErrConfig)) {
			t.Errorf("%d: Set(%s, %s) = %v, %v", i, tt.k, tt.v, ok, err)
		}
	}
	var s Settings
	s.Set("admin.needClientAuth", "true")
	if err := s.Validate(); !errors.Is(err, ErrConfig) {
		t.Errorf("admin.needClientAuth=true validated: %v", err)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvAuth, "op:env")
	if got := FromEnv(""); got != "op:env" {
		t.Errorf("FromEnv(\"\") = %q", got)
	}
	if got := FromEnv("op:flag"); got != "op:flag" {
		t.Errorf("FromEnv(flag) = %q", got)
	}
}

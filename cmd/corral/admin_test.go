package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/adminauth"
)

// TestAdminAuthFlag: the commands that change state through the admin port (move, shards add,
// members add and remove) send --admin-auth, or else $CORRAL_ADMIN_AUTH, as the operator's
// credentials.
func TestAdminAuthFlag(t *testing.T) {
	var s adminauth.Settings
	if _, err := s.Set("corral.admin.digest", acl.Digest("op:pw")); err != nil {
		t.Fatal(err)
	}
	var calls []string
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls = append(calls, r.URL.Path) })
	srv := httptest.NewServer(adminauth.New(s, "", slog.New(slog.NewTextHandler(&strings.Builder{}, nil)), ok))
	defer srv.Close()
	admin := strings.TrimPrefix(srv.URL, "http://")
	commands := map[string]func([]string) int{"move": runMove, "shards": runShards, "members": runMembers}

	for i, tt := range []struct {
		env  string
		args []string
		want int
	}{
		0: {"", []string{"move", "--admin", admin, "/a", "3"}, 1},
		1: {"", []string{"move", "--admin", admin, "--admin-auth", "op:pw", "/a", "3"}, 0},
		2: {"", []string{"move", "--admin", admin, "--admin-auth", "op:bad", "/a", "3"}, 1},
		3: {"op:pw", []string{"move", "--admin", admin, "/a", "3"}, 0},
		4: {"op:bad", []string{"move", "--admin", admin, "--admin-auth", "op:pw", "/a", "3"}, 0},
		5: {"", []string{"shards", "add", "--admin", admin, "--admin-auth", "op:pw"}, 0},
		6: {"", []string{"shards", "add", "--admin", admin}, 1},
		7: {"", []string{"members", "add", "--admin", admin, "--admin-auth", "op:pw", "--id", "4", "--raft", "h:2888"}, 0},
		8: {"op:pw", []string{"members", "remove", "--admin", admin, "--id", "4"}, 0},
		9: {"", []string{"members", "remove", "--admin", admin, "--id", "4"}, 1},
	} {
		t.Setenv(adminauth.EnvAuth, tt.env)
		got := commands[tt.args[0]](tt.args[1:])
		if got != tt.want {
			t.Errorf("%d: corral %s (%s=%q): exit %d, want %d", i, strings.Join(tt.args, " "), adminauth.EnvAuth, tt.env, got, tt.want)
		}
	}
	if len(calls) != 6 {
		t.Errorf("%d requests reached the endpoints, want 6: %v", len(calls), calls)
	}
}

package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/tools/backupfile"
)

// TestBackupRestoreExitCodes: usage mistakes exit 2; a backup the admin port refuses (no
// operator) or answers with something that is not a backup file exits 1 and leaves no file; a
// restore of a file that is not a backup exits 1 before it connects anywhere; a restore that
// POST /restore refuses (no operator) or answers with something else than its JSON lines exits 1.
func TestBackupRestoreExitCodes(t *testing.T) {
	var s adminauth.Settings
	if _, err := s.Set("corral.admin.digest", acl.Digest("op:pw")); err != nil {
		t.Fatal(err)
	}
	garbage := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("not a backup")) })
	srv := httptest.NewServer(adminauth.New(s, "", slog.New(slog.NewTextHandler(&strings.Builder{}, nil)), garbage))
	defer srv.Close()
	admin := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	out := filepath.Join(dir, "x.backup")
	notBackup := filepath.Join(dir, "not.backup")
	if err := os.WriteFile(notBackup, []byte("ZKSNAPSHOT"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.backup")
	f, err := os.Create(good)
	if err != nil {
		t.Fatal(err)
	}
	bw, err := backupfile.NewWriter(f, backupfile.Header{})
	if err == nil {
		_, err = bw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Setenv(adminauth.EnvAuth, "")
	for i, tt := range []struct {
		run  func([]string) int
		args []string
		want int
	}{
		0: {runBackup, []string{"--admin", admin}, 2},
		1: {runBackup, []string{"--out", out, "extra"}, 2},
		2: {runBackup, []string{"--admin", admin, "--out", out}, 1},                          // 401: no operator
		3: {runBackup, []string{"--admin", admin, "--out", out, "--admin-auth", "op:pw"}, 1}, // not a backup file
		4: {runRestore, []string{"--in", notBackup}, 2},                                      // no --admin
		5: {runRestore, []string{"--admin", "127.0.0.1:1", "--in", notBackup}, 1},
		6: {runRestore, []string{"--admin", "127.0.0.1:1", "--to", "127.0.0.1:1", "--in", filepath.Join(dir, "missing")}, 1},
		7: {runRestore, []string{"--admin", admin, "--in", good}, 1},                          // 401: no operator
		8: {runRestore, []string{"--admin", admin, "--in", good, "--admin-auth", "op:pw"}, 1}, // not a restore's answer
	} {
		if got := tt.run(tt.args); got != tt.want {
			t.Errorf("%d: %v: exit %d, want %d", i, tt.args, got, tt.want)
		}
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "x.backup*")); len(names) != 0 {
		t.Errorf("failed backups left files: %v", names)
	}
}

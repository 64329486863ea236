package sasl_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral/corral/internal/apachezk"
)

// jaasText is the JAAS file both servers are configured from; the Client sections are what
// the Java client logs in with (one file per user, section "Client").
const jaasText = `/* server users (DigestLoginModule) */
Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_bob="bobsecret"
       user_alice="alicesecret";
};
`

func clientJAAS(user, pass string) string {
	return fmt.Sprintf("Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=%q\n  password=%q;\n};\n", user, pass)
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// zkCli runs lines in one zkCli.sh session against server, logged in from the JAAS file
// (none: no SASL), and returns stdout and stderr merged.
func zkCli(ctx context.Context, t *testing.T, server, jaas string, lines ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, apachezk.CLIPath, "-server", server)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=")
	if jaas != "" {
		cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-Djava.security.auth.login.config="+jaas)
	}
	cmd.Stdin = strings.NewReader(strings.Join(append(lines, "quit"), "\n") + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	_ = cmd.Run() // the exit status is the last command's
	return out.String()
}

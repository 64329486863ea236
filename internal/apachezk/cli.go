package apachezk

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

// RunCLI runs lines in one zkCli.sh session against server with CLIENT_JVMFLAGS set to
// jvmFlags (a JAAS Client section, a krb5.conf, ...), then quits, and returns stdout and
// stderr merged. The exit status is the last command's, so it is not reported; a context
// cancelled kills zkCli's process group.
func RunCLI(ctx context.Context, server, jvmFlags string, lines ...string) string {
	cmd := exec.CommandContext(ctx, CLIPath, "-server", server)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS="+jvmFlags)
	cmd.Stdin = strings.NewReader(strings.Join(append(lines, "quit"), "\n") + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	_ = cmd.Run()
	return out.String()
}

var (
	cliNoise = regexp.MustCompile(`^(SLF4J: |log4j:|Connecting to |Welcome to ZooKeeper!$|JLine support is|WATCHER::$|\s*$)`)
	cliEvent = regexp.MustCompile(`^WatchedEvent state:(\w+) type:None path:null$`)
)

// NormaliseCLI keeps zkCli's command output in order and the connection states it reported
// (asynchronously, so as a sorted set on a first "states:" line), without JVM noise.
// Disconnected is left out: after a server closes the connection, whether the client notices
// before zkCli's quit closes it races, against Apache ZooKeeper as against Corral.
func NormaliseCLI(raw string) string {
	var lines []string
	states := map[string]bool{}
	for _, l := range strings.Split(raw, "\n") {
		l = strings.TrimRight(l, "\r ")
		if m := cliEvent.FindStringSubmatch(l); m != nil {
			states[m[1]] = m[1] != "Disconnected"
			continue
		}
		if !cliNoise.MatchString(l) {
			lines = append(lines, l)
		}
	}
	var st []string
	for s, keep := range states {
		if keep {
			st = append(st, s)
		}
	}
	sort.Strings(st)
	return "states: " + strings.Join(st, ",") + "\n" + strings.Join(lines, "\n") + "\n"
}

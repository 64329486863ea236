package cclient

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/testcluster"
)

const cliMT = "/usr/lib/zookeeper/bin/cli_mt"

// script exercises create (plain, ephemeral, sequential, container, create2), get, set, ls,
// ls2, exists, sync and delete, including failing commands.
var script = []string{
	"create /cc", "create /cc", "create +e /cc/eph", "create +s /cc/seq-", "create +s /cc/seq-",
	"create +c /cont", "create2 /cc/two", "set /cc hello", "get /cc", "ls /cc", "ls2 /cc",
	"exists /cc/eph", "exists /nope", "sync /cc", "delete /cc", "delete /cc/two", "get /nope",
	"delete /cc/eph", "ls /cc",
}

// transcript runs the script with cli_mt and keeps the lines that must agree between servers:
// return codes, data and child lists, with zxids, times, session ids and latencies removed.
func transcript(t *testing.T, addr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliMT, addr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var outBuf lockedBuffer
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// cli_mt runs commands asynchronously and quits without waiting for them; pace the input so
	// each command's answer is printed before the next command (and the quit) is sent: at least
	// 300 ms, then until the output has been quiet for 150 ms (150 ms flat was too short on a
	// loaded machine, and the transcripts then interleaved differently).
	time.Sleep(500 * time.Millisecond)
	for _, c := range script {
		stdin.Write([]byte(c + "\n"))
		time.Sleep(300 * time.Millisecond)
		settle(&outBuf, 150*time.Millisecond, 3*time.Second)
	}
	stdin.Write([]byte("quit\n"))
	stdin.Close()
	if err := cmd.Wait(); err != nil && ctx.Err() != nil {
		t.Fatalf("cli_mt against %s: %v\n%s", addr, err, outBuf.String())
	}
	out := outBuf.String()
	drop := regexp.MustCompile(`(?i)(zxid|time|ctime|mtime|ephemeralOwner|sessionId|session id|Session|established|msec|Watcher|ZOO_|zookeeper\.c|^\d{4}-)`)
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || drop.MatchString(line) || strings.HasPrefix(line, "/: rc = 0") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(sortChildRuns(keep), "\n")
}

// settle returns once out has not changed for quiet, or after limit.
func settle(out *lockedBuffer, quiet, limit time.Duration) {
	deadline := time.Now().Add(limit)
	last, since := out.Len(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		if n := out.Len(); n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) >= quiet {
			return
		}
	}
}

// lockedBuffer is an output buffer the command writes while the test reads its length.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// sortChildRuns sorts each run of consecutive bare names (the children ls prints): ZooKeeper
// lists children in HashSet order and Corral in byte order; the order is unspecified for clients.
func sortChildRuns(lines []string) []string {
	bare := func(s string) bool { return !strings.ContainsAny(s, " :=[") }
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && bare(lines[j]) {
			j++
		}
		if j > i {
			sort.Strings(lines[i:j])
			i = j
		} else {
			i++
		}
	}
	return lines
}

func TestCClientMatchesZooKeeper(t *testing.T) {
	if _, err := os.Stat(cliMT); err != nil {
		t.Fatalf("the C client is required (Debian package zookeeper-bin; run scripts/install-deps.sh): %v", err)
	}
	if err := apachezk.Available(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	zk, err := apachezk.Start(ctx, apachezk.Options{JVMFlags: []string{apachezk.FlagExtendedTypes, apachezk.FlagNoContainerGC}})
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Close()
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1,
		Extra: []string{"zookeeper.extendedTypesEnabled=true", "znode.container.checkIntervalMs=3600000"}})
	want := transcript(t, zk.Addrs()[0])
	got := transcript(t, cl.Addrs()[1])
	if !strings.Contains(want, "hello") {
		t.Fatalf("the ZooKeeper transcript looks broken:\n%s", want)
	}
	if got != want {
		t.Fatalf("cli_mt transcripts differ\n--- Apache ZooKeeper\n%s\n--- Corral\n%s", want, got)
	}
}

package zkcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/corral/corral/internal/apachezk"
)

// Command is one zkCli command line. "{base}" stands for the run's base
// path, a fresh top-level node.
type Command struct {
	Line string
	// Unordered marks commands whose output lines come in no defined order
	// (whoami, ls -R); they are sorted.
	Unordered bool
}

// Commands is the fixed sequence. It expects TTL nodes to be enabled on the
// server (zookeeper.extendedTypesEnabled=true).
func Commands() []Command {
	return []Command{
		{Line: "create {base}"},
		{Line: "create {base}/a hello"},
		{Line: "create {base}/a again"}, // exists
		{Line: "create -e {base}/a/eph e"},
		{Line: "create -s {base}/a/seq- s"},
		{Line: "create -s {base}/a/seq- s"},
		{Line: "create -e -s {base}/a/eseq- x"},
		{Line: "create {base}/a/eph/child x"}, // no children for ephemerals
		{Line: "create -c {base}/cont"},
		{Line: "create -t 3600000 {base}/ttl t"},
		{Line: "create {base}/missing/child"}, // no parent
		{Line: "ls {base}"},
		{Line: "ls {base}/a"},
		{Line: "ls -s {base}/a"},
		{Line: "ls -R {base}", Unordered: true},
		{Line: "get {base}/a"},
		{Line: "get -s {base}/a"},
		{Line: "get {base}/missing"},
		{Line: "stat {base}/a/eph"},
		{Line: "stat {base}/missing"},
		{Line: "set {base}/a world"},
		{Line: "set -s {base}/a world2"},
		{Line: "set -v 0 {base}/a stale"}, // bad version
		{Line: "set -s -v 2 {base}/a world3"},
		{Line: "get -s {base}/a"},
		{Line: "delete {base}/a"}, // not empty
		{Line: "delete -v 5 {base}/a/seq-0000000001"},
		{Line: "delete -v 0 {base}/a/seq-0000000001"},
		{Line: "delete {base}/a/seq-0000000001"}, // gone
		{Line: "ls -s {base}/a"},
		{Line: "getAcl {base}/a"},
		{Line: "whoami", Unordered: true},
		{Line: "addauth digest alice:secret"},
		{Line: "whoami", Unordered: true},
		{Line: "create {base}/priv p"},
		{Line: "setAcl {base}/priv auth::cdrwa"},
		{Line: "getAcl {base}/priv"},
		{Line: "setAcl -v 0 {base}/priv world:anyone:r"}, // bad aversion
		{Line: "setAcl -s {base}/priv world:anyone:ra"},
		{Line: "getAcl -s {base}/priv"},
		{Line: "setAcl {base}/priv world:anyone:r"},
		{Line: "setAcl {base}/priv digest:alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=:cdrwa"}, // no ADMIN any more
		{Line: "set {base}/priv x"},                                                  // no WRITE
		{Line: "get {base}/priv"},
		{Line: "create {base}/ro r"},
		{Line: "setAcl {base}/ro ip:127.0.0.1:cdrwa"},
		{Line: "getAcl {base}/ro"},
		{Line: "sync {base}/a"},
		{Line: "config"},
		{Line: "getAllChildrenNumber {base}"},
		{Line: "getEphemerals {base}"},
		{Line: "deleteall {base}/a"},
		{Line: "ls -s {base}"},
		{Line: "stat {base}/cont"},
		{Line: "delete {base}/nonexistent"},
		{Line: "deleteall {base}"},
		{Line: "ls {base}"},
	}
}

// Available says why zkCli cannot run, or nil.
func Available() error {
	if _, err := os.Stat(apachezk.CLIPath); err != nil {
		return fmt.Errorf("zkcli: %s missing: %w; %s", apachezk.CLIPath, err, apachezk.InstallHint)
	}
	return apachezk.Available()
}

var runSeq atomic.Int64

// Transcript runs Commands() in one zkCli session against server
// ("host:port") and returns the normalised transcript: each command as
// "> line" followed by its normalised output lines.
func Transcript(ctx context.Context, server string) (string, error) {
	nonce := fmt.Sprintf("%d-%d-%d", os.Getpid(), time.Now().UnixNano(), runSeq.Add(1))
	return TranscriptOf(ctx, server, Commands(), "/zkcli-"+nonce)
}

// Both runs cmds with zkCli against Apache ZooKeeper (zkAddr) and Corral
// (corralAddr) concurrently and returns both transcripts. Without bases each
// run gets a fresh base of its own.
func Both(ctx context.Context, zkAddr, corralAddr string, cmds []Command, bases ...string) (want, got string, err error) {
	run := func(addr string) (string, error) {
		b := bases
		if len(b) == 0 {
			b = []string{fmt.Sprintf("/zkcli-%d-%d-%d", os.Getpid(), time.Now().UnixNano(), runSeq.Add(1))}
		}
		return TranscriptOf(ctx, addr, cmds, b...)
	}
	var wantErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		want, wantErr = run(zkAddr)
	}()
	got, err = run(corralAddr)
	<-done
	if wantErr != nil {
		return "", "", fmt.Errorf("against Apache ZooKeeper: %w", wantErr)
	}
	if err != nil {
		return "", "", fmt.Errorf("against Corral: %w", err)
	}
	return want, got, nil
}

// TranscriptOf runs cmds in one zkCli session against server, with "{base}"
// standing for bases[0], "{base2}" for bases[1] and so on (no base may be a
// prefix of another), and returns the normalised transcript, each base
// written as in the commands.
func TranscriptOf(ctx context.Context, server string, cmds []Command, bases ...string) (string, error) {
	if err := Available(); err != nil {
		return "", err
	}
	nonce := fmt.Sprintf("%d-%d-%d", os.Getpid(), time.Now().UnixNano(), runSeq.Add(1))
	markPrefix := "/zkcli-mark-" + nonce + "-"
	var in strings.Builder
	for i, c := range cmds {
		in.WriteString(expandBases(c.Line, bases))
		in.WriteString("\n")
		fmt.Fprintf(&in, "ls %s%d\n", markPrefix, i)
	}
	in.WriteString("quit\n")

	cmd := exec.CommandContext(ctx, apachezk.CLIPath, "-server", server)
	// zkCli.sh does not exec java: on cancellation kill the whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Stdin = strings.NewReader(in.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out // one pipe: order kept
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	// zkCli's exit status is the last command's (here: a failing marker),
	// so completeness is judged by the markers instead.
	sections, err := split(out.String(), markPrefix, len(cmds))
	if err != nil {
		if runErr != nil && !isExitError(runErr) {
			err = fmt.Errorf("%w (zkCli: %v)", err, runErr)
		}
		return "", fmt.Errorf("%w\nraw output:\n%s", err, out.String())
	}
	n := newNormaliser(bases)
	var b strings.Builder
	for i, c := range cmds {
		fmt.Fprintf(&b, "> %s\n", c.Line)
		lines := n.lines(sections[i])
		if c.Unordered {
			sort.Strings(lines)
		}
		for _, l := range lines {
			b.WriteString(l)
			b.WriteString("\n")
		}
	}
	return b.String(), nil
}

func isExitError(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// noise is output that does not belong to any command.
var noise = []*regexp.Regexp{
	regexp.MustCompile(`^SLF4J: `),
	regexp.MustCompile(`^Connecting to `),
	regexp.MustCompile(`^Welcome to ZooKeeper!$`),
	regexp.MustCompile(`^JLine support is (disabled|enabled)$`),
	regexp.MustCompile(`^WATCHER::$`),
	regexp.MustCompile(`^WatchedEvent state:\w+ type:None path:null$`),
	regexp.MustCompile(`^log4j:`),
	regexp.MustCompile(`^\s*$`),
}

// split cuts zkCli's output at the marker lines into n sections.
func split(raw, markPrefix string, n int) ([][]string, error) {
	sections := make([][]string, 0, n)
	var cur []string
	for _, line := range strings.Split(raw, "\n") {
		line = strings.TrimRight(line, "\r ")
		if i := strings.Index(line, markPrefix); i >= 0 {
			var idx int
			if _, err := fmt.Sscanf(line[i+len(markPrefix):], "%d", &idx); err != nil || idx != len(sections) {
				return nil, fmt.Errorf("zkcli: marker out of order: %q (expected %d)", line, len(sections))
			}
			sections = append(sections, cur)
			cur = nil
			continue
		}
		isNoise := false
		for _, re := range noise {
			if re.MatchString(line) {
				isNoise = true
				break
			}
		}
		if !isNoise {
			cur = append(cur, line)
		}
	}
	if len(sections) != n {
		return nil, fmt.Errorf("zkcli: saw %d of %d command markers", len(sections), n)
	}
	return sections, nil
}

var (
	reZxid    = regexp.MustCompile(`^([cmp]Zxid) = (0x[0-9a-f]+)$`)
	reTime    = regexp.MustCompile(`^([cm]time) = .*$`)
	reOwner   = regexp.MustCompile(`^ephemeralOwner = (0x[0-9a-f]+)$`)
	rePort    = regexp.MustCompile(`127\.0\.0\.1(:\d+)+`)
	reDigits  = regexp.MustCompile(`:\d+`)
	reVersion = regexp.MustCompile(`^version=[0-9a-f]+$`)
	reList    = regexp.MustCompile(`^\[(.*)\]$`)
)

// baseName is how bases[i] is written in commands and transcripts.
func baseName(i int) string {
	if i == 0 {
		return "{base}"
	}
	return fmt.Sprintf("{base%d}", i+1)
}

// expandBases writes the bases into a command line.
func expandBases(line string, bases []string) string {
	for i := len(bases) - 1; i >= 0; i-- {
		line = strings.ReplaceAll(line, baseName(i), bases[i])
	}
	return line
}

// normaliser renames zxids and sessions consistently across one transcript.
type normaliser struct {
	bases    []string
	zxids    map[string]string
	sessions map[string]string
}

func newNormaliser(bases []string) *normaliser {
	return &normaliser{bases: bases, zxids: map[string]string{}, sessions: map[string]string{}}
}

func (n *normaliser) lines(in []string) []string {
	out := make([]string, 0, len(in))
	for _, l := range in {
		out = append(out, n.line(l))
	}
	return out
}

func (n *normaliser) line(l string) string {
	for i, base := range n.bases {
		name := "/base"
		if i > 0 {
			name = fmt.Sprintf("/base%d", i+1)
		}
		l = strings.ReplaceAll(l, base, name)
	}
	if m := reZxid.FindStringSubmatch(l); m != nil {
		return m[1] + " = " + rename(n.zxids, m[2], "zxid")
	}
	if m := reTime.FindStringSubmatch(l); m != nil {
		return m[1] + " = <time>"
	}
	if m := reOwner.FindStringSubmatch(l); m != nil && m[1] != "0x0" {
		return "ephemeralOwner = " + rename(n.sessions, m[1], "session")
	}
	if reVersion.MatchString(l) {
		return "version=<zxid>"
	}
	l = rePort.ReplaceAllStringFunc(l, func(a string) string { return reDigits.ReplaceAllString(a, ":<port>") })
	if m := reList.FindStringSubmatch(l); m != nil && m[1] != "" {
		items := strings.Split(m[1], ", ")
		sort.Strings(items)
		return "[" + strings.Join(items, ", ") + "]"
	}
	return l
}

func rename(seen map[string]string, v, kind string) string {
	if s, ok := seen[v]; ok {
		return s
	}
	s := fmt.Sprintf("%s-%d", kind, len(seen)+1)
	seen[v] = s
	return s
}

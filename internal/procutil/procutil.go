package procutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StopGrace is how long a SIGTERM'd process may take before it gets SIGKILL.
const StopGrace = 15 * time.Second

// Process is one started child process. Its reaper goroutine (started by
// [Start]) is the only writer of the exit error and closes Done after
// cmd.Wait returns.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts cmd with stdin empty and stdout and stderr going to out, in
// its own process group and (on Linux) with SIGKILL as parent-death signal.
// It takes ownership of out: out is closed when the process has exited, or
// at once if cmd does not start.
func Start(cmd *exec.Cmd, out *os.File) (*Process, error) {
	cmd.Stdin = nil
	cmd.Stdout = out
	cmd.Stderr = out
	attr := sysProcAttr()
	if cmd.SysProcAttr != nil {
		attr.Credential = cmd.SysProcAttr.Credential // the caller's choice of user survives
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the result of cmd.Wait; it is meaningful only after Done is closed.
func (p *Process) Err() error { return p.err }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Pid is the operating system's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Terminate sends sig and waits for the process to exit. For any signal but
// SIGKILL, the process gets SIGKILL if it has not exited after grace.
func (p *Process) Terminate(sig syscall.Signal, grace time.Duration) {
	_ = p.cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL {
		<-p.done
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// TerminateAll terminates procs in parallel (see [Process.Terminate]) and
// waits for all of them.
func TerminateAll(procs []*Process, sig syscall.Signal, grace time.Duration) {
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Terminate(sig, grace)
		}()
	}
	wg.Wait()
}

// CloseSignal is how an ensemble's Close stops its processes: SIGKILL, or
// SIGTERM with [StopGrace] when keepDir asks for cleanly flushed logs.
func CloseSignal(keepDir bool) (syscall.Signal, time.Duration) {
	if keepDir {
		return syscall.SIGTERM, StopGrace
	}
	return syscall.SIGKILL, 0
}

// FreePorts reserves n distinct loopback ports by binding them all at once, then releases them
// for servers to bind.
//
// The ports come from below the kernel's range of ephemeral ports
// (/proc/sys/net/ipv4/ip_local_port_range), so between the release and the server's bind no
// outgoing connection on this machine can be given one as its source port: with ports from the
// ephemeral range, a test's servers dialling each other occasionally took a port another server
// was about to listen on ("bind: address already in use"). Where the range cannot be read, the
// kernel picks (port 0).
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo, hi := reservablePorts()
	ports := make([]int, 0, n)
	for attempts := 0; len(ports) < n; attempts++ {
		addr := "127.0.0.1:0"
		if hi > lo && attempts < 50*n {
			addr = "127.0.0.1:" + strconv.Itoa(lo+rand.IntN(hi-lo))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // taken: try another
			}
			return nil, fmt.Errorf("reserving a port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// reservablePorts is the range FreePorts draws from: from 10000 to the first ephemeral port, or
// an empty range when that is not known (or leaves no room).
func reservablePorts() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 0, 0
	}
	first, err := strconv.Atoi(f[0])
	if err != nil || first <= 11000 {
		return 0, 0
	}
	return 10000, first
}

// MergeConfig applies extra to the ordered key/value list kv: in key order,
// each extra key replaces the value of every entry with that key, or is
// appended if there is none.
func MergeConfig(kv [][2]string, extra map[string]string) [][2]string {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		replaced := false
		for i := range kv {
			if kv[i][0] == k {
				kv[i][1] = extra[k]
				replaced = true
			}
		}
		if !replaced {
			kv = append(kv, [2]string{k, extra[k]})
		}
	}
	return kv
}

// FormatConfig renders kv as zoo.cfg text, "key=value" lines after the
// comment line "# written by <writer>".
func FormatConfig(writer string, kv [][2]string) string {
	var cfg strings.Builder
	cfg.WriteString("# written by " + writer + "\n")
	for _, p := range kv {
		fmt.Fprintf(&cfg, "%s=%s\n", p[0], p[1])
	}
	return cfg.String()
}

// FourLetterWord sends a four-letter word (ruok, srvr, mntr, ...) to addr
// and returns the whole reply; the server closes the connection after
// answering. Without a ctx deadline the exchange is bounded by 10s.
func FourLetterWord(ctx context.Context, addr, word string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	}
	if _, err := conn.Write([]byte(word)); err != nil {
		return "", err
	}
	out, err := io.ReadAll(conn)
	if err != nil && len(out) == 0 {
		return "", err
	}
	return string(out), nil
}

// ParseMode returns the value of the "Mode: " line of a `srvr` reply.
func ParseMode(srvr string) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(srvr))
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(m), true
		}
	}
	return "", false
}

// Tail returns the last n lines of data.
func Tail(data []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// RunAs makes cmd run as uid (and the same gid): own, a directory the process writes, is
// given to that user, and each of traverse is made readable and traversable by everyone.
// Fault tests use it to tell a server's packets apart (internal/nemesis). Needs root.
func RunAs(cmd *exec.Cmd, uid int, own string, traverse ...string) error {
	for _, d := range traverse {
		if err := os.Chmod(d, 0o755); err != nil {
			return err
		}
	}
	err := filepath.WalkDir(own, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, uid)
	})
	if err != nil {
		return fmt.Errorf("giving %s to uid %d: %w", own, uid, err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	return nil
}

package procutil_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/corral/corral/internal/procutil"
)

func logFile(t *testing.T) (*os.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return f, path
}

func TestStartCapturesOutputAndReaps(t *testing.T) {
	out, path := logFile(t)
	p, err := procutil.Start(exec.Command("sh", "-c", "echo hello; echo oops >&2; exit 3"), out)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit")
	}
	if !p.Exited() {
		t.Fatal("Exited = false after Done")
	}
	var ee *exec.ExitError
	if !errors.As(p.Err(), &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Err = %v, want exit status 3", p.Err())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "hello\noops\n" {
		t.Fatalf("log = %q", data)
	}
	if _, err := out.Write([]byte("x")); err == nil {
		t.Fatal("log file still open after exit")
	}
}

func TestStartFailureClosesLog(t *testing.T) {
	out, _ := logFile(t)
	if _, err := procutil.Start(exec.Command(filepath.Join(t.TempDir(), "missing")), out); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
	if _, err := out.Write([]byte("x")); err == nil {
		t.Fatal("log file still open after failed Start")
	}
}

func TestTerminate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cmd   string
		sig   syscall.Signal
		grace time.Duration
		want  syscall.Signal
	}{
		{"kill", "exec sleep 30", syscall.SIGKILL, 0, syscall.SIGKILL},
		{"term", "exec sleep 30", syscall.SIGTERM, 10 * time.Second, syscall.SIGTERM},
		{"term ignored, killed after grace", `trap "" TERM; exec sleep 30`, syscall.SIGTERM, 200 * time.Millisecond, syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := logFile(t)
			p, err := procutil.Start(exec.Command("sh", "-c", tc.cmd), out)
			if err != nil {
				t.Fatal(err)
			}
			if p.Pid() <= 0 || p.Exited() {
				t.Fatalf("Pid = %d, Exited = %v right after Start", p.Pid(), p.Exited())
			}
			time.Sleep(100 * time.Millisecond) // let sh reach exec
			p.Terminate(tc.sig, tc.grace)
			if !p.Exited() {
				t.Fatal("Exited = false after Terminate")
			}
			var ee *exec.ExitError
			if !errors.As(p.Err(), &ee) {
				t.Fatalf("Err = %v, want an exit error", p.Err())
			}
			ws := ee.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != tc.want {
				t.Fatalf("wait status %v, want killed by %v", ws, tc.want)
			}
		})
	}
}

func TestTerminateAll(t *testing.T) {
	var procs []*procutil.Process
	for i := 0; i < 3; i++ {
		out, _ := logFile(t)
		p, err := procutil.Start(exec.Command("sleep", "30"), out)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	sig, grace := procutil.CloseSignal(false)
	if sig != syscall.SIGKILL || grace != 0 {
		t.Fatalf("CloseSignal(false) = %v, %v", sig, grace)
	}
	if sig, grace := procutil.CloseSignal(true); sig != syscall.SIGTERM || grace != procutil.StopGrace {
		t.Fatalf("CloseSignal(true) = %v, %v", sig, grace)
	}
	procutil.TerminateAll(procs, sig, grace)
	for i, p := range procs {
		if !p.Exited() {
			t.Fatalf("process %d still running", i)
		}
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := procutil.FreePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v: bad or repeated %d", ports, p)
		}
		seen[p] = true
	}
	// Released: each can be bound again.
	for _, p := range ports[:2] {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d not released: %v", p, err)
		}
		l.Close()
	}
}

func TestConfig(t *testing.T) {
	kv := [][2]string{{"tickTime", "2000"}, {"clientPort", "1"}, {"dup", "a"}, {"dup", "b"}}
	got := procutil.MergeConfig(kv, map[string]string{"zeta": "z", "clientPort": "9", "alpha": "x", "dup": "c"})
	want := [][2]string{{"tickTime", "2000"}, {"clientPort", "9"}, {"dup", "c"}, {"dup", "c"}, {"alpha", "x"}, {"zeta", "z"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MergeConfig = %v, want %v", got, want)
	}
	if got := procutil.MergeConfig([][2]string{{"a", "1"}}, nil); !reflect.DeepEqual(got, [][2]string{{"a", "1"}}) {
		t.Fatalf("MergeConfig(nil extra) = %v", got)
	}
	text := procutil.FormatConfig("internal/x", [][2]string{{"a", "1"}, {"b", "2"}})
	if text != "# written by internal/x\na=1\nb=2\n" {
		t.Fatalf("FormatConfig = %q", text)
	}
}

func TestParseModeAndTail(t *testing.T) {
	if m, ok := procutil.ParseMode("Zookeeper version: 3.8\nLatency min/avg/max: 0/0/0\nMode: follower \nNode count: 5\n"); !ok || m != "follower" {
		t.Fatalf("ParseMode = %q, %v", m, ok)
	}
	if _, ok := procutil.ParseMode("This ZooKeeper instance is not currently serving requests\n"); ok {
		t.Fatal("ParseMode found a mode in a not-serving reply")
	}
	if got := procutil.Tail([]byte("1\n2\n3\n4\n\n"), 2); got != "3\n4" {
		t.Fatalf("Tail = %q", got)
	}
	if got := procutil.Tail([]byte("1\n2"), 5); got != "1\n2" {
		t.Fatalf("Tail short = %q", got)
	}
}

func TestFourLetterWord(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		if string(buf) == "ruok" {
			c.Write([]byte("imok"))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := procutil.FourLetterWord(ctx, l.Addr().String(), "ruok")
	if err != nil || out != "imok" {
		t.Fatalf("FourLetterWord = %q, %v", out, err)
	}
	l.Close()
	if _, err := procutil.FourLetterWord(ctx, l.Addr().String(), "ruok"); err == nil {
		t.Fatal("FourLetterWord to a closed port succeeded")
	}
}

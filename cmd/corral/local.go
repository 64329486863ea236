package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// runLocal starts an ensemble on this machine, each server its own process, and prints
// "ready <connect string>" once every server accepts clients. Ctrl-C stops it.
func runLocal(args []string) int {
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	servers := fs.Int("servers", 3, "number of servers")
	shards := fs.Int("shards", 4, "number of data shards")
	port := fs.Int("port", 2181, "client port of the first server (the others follow)")
	dir := fs.String("dir", "data/local", "data directory")
	extra := fs.String("set", "", "extra zoo.cfg lines, separated by ';'")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "corral local:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var procs []*exec.Cmd
	var addrs []string
	defer func() {
		// One server at a time: a server hands its shard leaderships to a peer before it
		// stops (cmd/corral/server.go), which works only while a peer is still up; all at
		// once, they hand them to each other until the hand-off's timeout.
		for _, p := range procs {
			p.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				p.Process.Kill()
				<-done
			}
		}
	}()
	for i := 1; i <= *servers; i++ {
		sdir, err := filepath.Abs(filepath.Join(*dir, fmt.Sprintf("server%d", i)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "corral local:", err)
			return 1
		}
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "corral local:", err)
			return 1
		}
		cfg := LocalConfig(i, *servers, *shards, *port, sdir)
		if *extra != "" {
			cfg += strings.ReplaceAll(*extra, ";", "\n") + "\n"
		}
		cfgPath := filepath.Join(sdir, "zoo.cfg")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "corral local:", err)
			return 1
		}
		if err := os.WriteFile(filepath.Join(sdir, "myid"), []byte(fmt.Sprintf("%d\n", i)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "corral local:", err)
			return 1
		}
		logf, err := os.OpenFile(filepath.Join(sdir, "corral.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "corral local:", err)
			return 1
		}
		cmd := exec.Command(self, "server", "--config", cfgPath)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "corral local:", err)
			return 1
		}
		procs = append(procs, cmd)
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", *port+i-1))
	}
	fmt.Fprintf(os.Stderr, "corral local: starting %d servers, %d shards, logs in %s/server*/corral.log\n", *servers, *shards, *dir)
	for _, a := range addrs {
		if err := waitRuok(ctx, a, 2*time.Minute); err != nil {
			fmt.Fprintf(os.Stderr, "corral local: %s did not become ready: %v\n", a, err)
			return 1
		}
	}
	fmt.Printf("ready %s\n", strings.Join(addrs, ","))
	exited := make(chan int, len(procs))
	for i, p := range procs {
		go func() { p.Wait(); exited <- i + 1 }()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "corral local: stopping")
	case id := <-exited:
		fmt.Fprintf(os.Stderr, "corral local: server %d exited; stopping the others\n", id)
		return 1
	}
	return 0
}

// LocalConfig is the zoo.cfg of server i (1-based) of an n-server local ensemble.
func LocalConfig(i, n, shards, port int, dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=2000\ninitLimit=10\nsyncLimit=5\n")
	fmt.Fprintf(&b, "dataDir=%s\n", dir)
	fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=127.0.0.1\n", port+i-1)
	fmt.Fprintf(&b, "admin.serverPort=%d\n", port+5899+i)
	fmt.Fprintf(&b, "4lw.commands.whitelist=*\n")
	fmt.Fprintf(&b, "corral.shards=%d\n", shards)
	for j := 1; j <= n; j++ {
		fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", j, port+706+j, port+1706+j)
	}
	return b.String()
}

// waitRuok polls the four-letter word ruok until the server answers imok.
func waitRuok(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			c.Write([]byte("ruok"))
			buf := make([]byte, 4)
			n, _ := c.Read(buf)
			c.Close()
			if string(buf[:n]) == "imok" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to ruok within %v", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

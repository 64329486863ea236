package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"
)

// runMove asks a server (through its admin port) to move a subtree to another data shard,
// online (cluster/move.go):
//
//	corral move --admin host:port /kafka 4
//
// It prints the server's answer and exits 1 if the move was refused or failed.
func runMove(args []string) int {
	fs := flag.NewFlagSet("move", flag.ContinueOnError)
	admin := fs.String("admin", "127.0.0.1:8080", "admin address (admin.serverAddress:admin.serverPort) of any running server")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the answer")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: corral move [--admin host:port] /path shard-id")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2
	}
	path := fs.Arg(0)
	if _, err := strconv.ParseUint(fs.Arg(1), 10, 64); err != nil {
		fmt.Fprintf(os.Stderr, "corral move: shard id %q is not a number (see the admin page /shards)\n", fs.Arg(1))
		return 2
	}
	q := url.Values{"path": {path}, "shard": {fs.Arg(1)}}
	client := &http.Client{Timeout: *timeout}
	resp, err := client.Post("http://"+*admin+"/move?"+q.Encode(), "text/plain", nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral move: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "corral move: %s: %s", resp.Status, body)
		return 1
	}
	fmt.Print(string(body))
	return 0
}

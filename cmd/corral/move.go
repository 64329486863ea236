package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/corral/corral/adminauth"
)

// runMove asks a server (through its admin port) to move a subtree to another data shard,
// online (cluster/move.go):
//
//	corral move --admin host:port /kafka 4
//	corral move --admin host:port [--expect N] /kafka new
//
// "new" adds a data shard first (as corral shards add) and moves the subtree onto it. It prints
// the server's answer and exits 1 if the move was refused or failed.
func runMove(args []string) int {
	fs := flag.NewFlagSet("move", flag.ContinueOnError)
	admin := fs.String("admin", "127.0.0.1:8080", "admin address (admin.serverAddress:admin.serverPort) of any running server")
	expect := fs.Int("expect", 0, "with new: add a shard only if the ensemble has this many data shards now (a retried command never adds two)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the answer")
	auth := adminAuthFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: corral move [--admin host:port] [--admin-auth user:password] [--expect N] /path shard-id|new")
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
	if _, err := strconv.ParseUint(fs.Arg(1), 10, 64); err != nil && fs.Arg(1) != "new" {
		fmt.Fprintf(os.Stderr, "corral move: shard id %q is not a number nor new (see corral shards list)\n", fs.Arg(1))
		return 2
	}
	q := url.Values{"path": {path}, "shard": {fs.Arg(1)}}
	if *expect > 0 {
		q.Set("expect", strconv.Itoa(*expect))
	}
	return adminCall("move", "POST", "http://"+*admin+"/move?"+q.Encode(), *timeout, adminauth.FromEnv(*auth))
}

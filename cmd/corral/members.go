package main

import (
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/corral/corral/adminauth"
)

// runMembers calls a server's admin endpoints for membership (cluster/membership.go):
//
//	corral members list   --admin host:port
//	corral members add    --admin host:port --id 4 --raft host:peerPort [--observer]
//	corral members remove --admin host:port --id 4
//
// It prints the server's answer (one line per shard) and exits 1 if any shard failed; a failed
// change can be asked again, every step is idempotent.
func runMembers(args []string) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "usage: corral members list|add|remove --admin host:port [--id N] [--raft host:port] [--observer]")
		return 2
	}
	op := args[0]
	fs := flag.NewFlagSet("members "+op, flag.ContinueOnError)
	admin := fs.String("admin", "127.0.0.1:8080", "admin address (admin.serverAddress:admin.serverPort) of any running member")
	id := fs.Uint64("id", 0, "server id (myid) to add or remove")
	raft := fs.String("raft", "", "add: the new server's host:peerPort (its server.N line's first two fields)")
	observer := fs.Bool("observer", false, "add: as an observer (non-voting replica); its zoo.cfg must say peerType=observer")
	timeout := fs.Duration("timeout", 60*time.Second, "how long the server keeps trying")
	auth := adminAuthFlag(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	q := url.Values{"timeout": {timeout.String()}}
	method, path := http.MethodPost, "/members/"+op
	switch op {
	case "list":
		method, path = http.MethodGet, "/members"
	case "add":
		if *id == 0 || *raft == "" {
			fmt.Fprintln(os.Stderr, "corral members add: --id and --raft are required")
			return 2
		}
		q.Set("raft", *raft)
		q.Set("observer", strconv.FormatBool(*observer))
		fallthrough
	case "remove":
		if *id == 0 {
			fmt.Fprintf(os.Stderr, "corral members %s: --id is required\n", op)
			return 2
		}
		q.Set("id", strconv.FormatUint(*id, 10))
	default:
		fmt.Fprintf(os.Stderr, "corral members: unknown operation %q (list, add, remove)\n", op)
		return 2
	}
	return adminCall("members "+op, method, "http://"+*admin+path+"?"+q.Encode(), *timeout+10*time.Second, adminauth.FromEnv(*auth))
}

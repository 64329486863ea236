package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/corral/corral/tools/inspect"
)

// runInspect looks into a stopped server's data directory without changing it
// (tools/inspect):
//
//	corral inspect DIR | --config zoo.cfg [--sessions] [--dump /path]
//
// Exit codes: 0 done, 1 failed (a running server, a missing or damaged directory), 2 usage.
func runInspect(args []string) int {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	config := fs.String("config", "", "the server's zoo.cfg: its dataDir and dataLogDir are inspected")
	dataLogDir := fs.String("datalogdir", "", "the server's dataLogDir, when it is set and no --config is given")
	sessions := fs.Bool("sessions", false, "list every session (id, timeout, owner, ephemerals)")
	dump := fs.String("dump", "", "print the subtree at this path as JSON lines instead of the summary")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, `usage: corral inspect DIR | --config zoo.cfg [--sessions] [--dump /path]

Reads a STOPPED server's data directory (dataDir of its zoo.cfg) and never writes to it: the
server id, the format level, every shard (kind, applied Raft index, last zxid), the znode count
and data bytes per top-level subtree, the session table, moved subtrees and added shards.
--dump prints one JSON object per znode of the subtree (path, data in base64 with null kept
apart from "", ACL, stat; zxids and ephemeralOwner as hex strings).

examples:
  corral inspect /srv/corral1
  corral inspect --config /srv/corral1/zoo.cfg --sessions
  corral inspect /srv/corral1 --dump /kafka > kafka.jsonl

flags:
`)
		fs.PrintDefaults()
	}
	// The directory may come before or after the flags.
	var dir string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		dir, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 && dir == "" {
		dir = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return 2
		}
	}
	if fs.NArg() != 0 || (dir == "" && *config == "") {
		fmt.Fprintln(os.Stderr, "corral inspect: give the data directory (DIR) or --config zoo.cfg")
		fs.Usage()
		return 2
	}
	o := inspect.Options{DataDir: dir, DataLogDir: *dataLogDir, Config: *config}
	if *dump != "" {
		if _, err := inspect.Dump(o, *dump, os.Stdout); err != nil {
			return inspectFailed(err)
		}
		return 0
	}
	rep, err := inspect.Inspect(o)
	if err != nil {
		return inspectFailed(err)
	}
	if err := rep.WriteText(os.Stdout, *sessions); err != nil {
		return inspectFailed(err)
	}
	return 0
}

func inspectFailed(err error) int {
	fmt.Fprintf(os.Stderr, "corral inspect: %v\n", err)
	return 1
}

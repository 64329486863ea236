package main

import (
	"fmt"
	"os"

	"github.com/corral/corral/internal/testknobs"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var code int
	switch os.Args[1] {
	case "server":
		code = runServer(os.Args[2:])
	case "local":
		code = runLocal(os.Args[2:])
	case "bench":
		code = runBench(os.Args[2:])
	case "members":
		code = runMembers(os.Args[2:])
	case "move":
		code = runMove(os.Args[2:])
	case "shards":
		code = runShards(os.Args[2:])
	case "import":
		code = runImport(os.Args[2:])
	case "inspect":
		code = runInspect(os.Args[2:])
	case "backup":
		code = runBackup(os.Args[2:])
	case "restore":
		code = runRestore(os.Args[2:])
	case "version", "--version", "-v":
		fmt.Println("corral", version)
		if testknobs.Enabled {
			fmt.Println("built with -tags " + testknobs.Tag + ": reads test knobs from the environment; not for production")
		}
	case "help", "-h", "--help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "corral: unknown command %q\n", os.Args[1])
		usage()
		code = 2
	}
	os.Exit(code)
}

const version = "0.1.0-dev (ZooKeeper 3.8 protocol)"

func usage() {
	fmt.Fprint(os.Stderr, `usage: corral <command> [flags]

commands:
  server --config zoo.cfg   run one server (zoo.cfg keys as Apache ZooKeeper, plus corral.*)
  local                     run a local ensemble (default 3 servers, 4 shards, ports 2181-2183)
  bench <experiment>        run a benchmark (throughput, failover, create, barrier, shards, sizing, matrix)
  members list|add|remove   list, add or remove servers online (through a server's admin port)
  move /path shard-id|new   move a subtree to another data shard online, or to a new one (through a server's admin port)
  shards list|add           list the data shards, or add one online (through a server's admin port)
  import --from zk:2181 ... copy a running ZooKeeper's tree (data, ACLs, stats) into Corral
  backup --out FILE         write one consistent cut of the whole namespace to a file (through a server's admin port)
  restore --in FILE         load a backup into an empty ensemble (through a server's admin port)
  inspect DIR               look into a stopped server's data directory (shards, subtrees, sessions; --dump /path)
  version                   print the version

members, move, shards, import, backup and restore send --admin-auth user:password (default $CORRAL_ADMIN_AUTH)
to the admin port, where changes may need an operator (docs/operations.md "Admin port").
`)
}

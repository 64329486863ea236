package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/tools/zkimport"
)

// runImport copies a tree from a running ZooKeeper-compatible ensemble into Corral
// (tools/zkimport):
//
//	corral import --from zk1:2181,zk2:2181 --to 127.0.0.1:2181 --admin 127.0.0.1:8080 [--path /kafka]
//
// Exit codes: 0 copied, 1 failed (the error names the znode), 2 usage.
func runImport(args []string) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	from := fs.String("from", "", "source servers, host:port[,host:port...] (Apache ZooKeeper or any server of its protocol)")
	dataDir := fs.String("zk-datadir", "", "instead of --from: a stopped Apache ZooKeeper's dataDir (holding version-2/ with snapshot.* and log.*)")
	dataLogDir := fs.String("zk-datalogdir", "", "with --zk-datadir: ZooKeeper's dataLogDir, when it is another directory")
	to := fs.String("to", "", "target Corral servers, host:port[,host:port...]")
	admin := fs.String("admin", "", "admin address (admin.serverAddress:admin.serverPort) of a target server: the stats are set through it")
	adminAuth := adminAuthFlag(fs)
	root := fs.String("path", "/", "copy only this subtree (its missing ancestors are created in the target)")
	var auth multiFlag
	fs.Var(&auth, "auth", "scheme:credentials added on both sessions, e.g. digest:user:password (repeatable)")
	skip := fs.Bool("skip-existing", false, "leave znodes that exist in the target as they are (resume an interrupted import)")
	overwrite := fs.Bool("overwrite", false, "give znodes that exist in the target the source's data, ACL and stat")
	dry := fs.Bool("dry-run", false, "only read the source and report what would be copied")
	conc := fs.Int("concurrency", 64, "requests in flight on each side")
	quiet := fs.Bool("quiet", false, "no progress lines")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, `usage: corral import --from HOSTS|--zk-datadir DIR --to HOSTS --admin HOST:PORT [flags]

Copies every persistent znode of a running ZooKeeper ensemble, or of a stopped one's data
directory (not /zookeeper, never an ephemeral), into Corral: data (null and empty kept apart),
ACL and stat (version, cversion, aversion, zxids, times; the next sequential child gets the
same name on both). From a running ensemble, container and TTL znodes arrive persistent:
ZooKeeper's client protocol does not tell them apart; a data directory does.

examples:
  corral import --from zk1:2181,zk2:2181,zk3:2181 --to 127.0.0.1:2181 --admin 127.0.0.1:8080
  corral import --from zk1:2181 --path /kafka --auth digest:kafka:secret --to 127.0.0.1:2181 --admin 127.0.0.1:8080
  corral import --zk-datadir /var/lib/zookeeper --to 127.0.0.1:2181 --admin 127.0.0.1:8080
  corral import --from zk1:2181 --dry-run

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || (*from == "") == (*dataDir == "") || !*dry && (*to == "" || *admin == "") || *skip && *overwrite {
		fmt.Fprintln(os.Stderr, "corral import: one of --from and --zk-datadir, and unless --dry-run --to and --admin, are required; --skip-existing and --overwrite exclude each other")
		fs.Usage()
		return 2
	}
	o := zkimport.Options{From: split(*from), DataDir: *dataDir, DataLogDir: *dataLogDir, To: split(*to), Admin: *admin,
		AdminAuth: adminauth.FromEnv(*adminAuth), Path: *root, Auth: auth, DryRun: *dry, Concurrency: *conc}
	tc, err := adminTLSConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral import: %v\n", err)
		return 2
	}
	o.AdminTLS = tc
	switch {
	case *skip:
		o.Existing = zkimport.Skip
	case *overwrite:
		o.Existing = zkimport.Overwrite
	}
	if !*quiet {
		o.Progress = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sum, err := zkimport.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral import: %v\n(after %s)\n", err, sum)
		return 1
	}
	if *dry {
		fmt.Printf("dry run: %d znodes (%d data bytes) would be copied\n", sum.Read, sum.Bytes)
		return 0
	}
	fmt.Println(sum)
	return 0
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/tools/backup"
)

// runBackup writes one consistent cut of the whole namespace to a file (tools/backup):
//
//	corral backup --admin 127.0.0.1:8080 --out corral.backup
//
// Exit codes: 0 written and checked, 1 failed (nothing left under the name), 2 usage.
func runBackup(args []string) int {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	admin := fs.String("admin", "", "admin address (admin.serverAddress:admin.serverPort) of any server")
	out := fs.String("out", "", "the backup file to write (written as FILE.partial, renamed once complete and checked)")
	adminAuth := adminAuthFlag(fs)
	quiet := fs.Bool("quiet", false, "no progress lines")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, `usage: corral backup --admin HOST:PORT --out FILE [flags]

Writes one consistent cut of the whole namespace, across every data shard, to FILE: every
persistent, container and TTL znode with its data, ACL and stat, and the quotas below
/zookeeper/quota (never an ephemeral: its session ends with the ensemble). The server stalls writes for a few Raft rounds
while it takes the cut (docs/operations.md "Backup and restore"), then streams the file from
that cut; it is checked (per-record CRC-32C, count, SHA-256) as it arrives. Needs an admin
operator, as changes do (docs/operations.md "Admin port").

examples:
  corral backup --admin 127.0.0.1:8080 --out /backups/corral-$(date -I).backup
  CORRAL_ADMIN_AUTH=ops:secret corral backup --admin zk1:8080 --out corral.backup
  curl -H 'Authorization: digest ops:secret' -o corral.backup http://zk1:8080/backup

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *admin == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "corral backup: --admin and --out are required")
		fs.Usage()
		return 2
	}
	tc, err := adminTLSConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral backup: %v\n", err)
		return 2
	}
	o := backup.Options{Admin: *admin, AdminAuth: adminauth.FromEnv(*adminAuth), AdminTLS: tc, File: *out}
	if !*quiet && onTerminal() {
		o.Progress = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sum, err := backup.Backup(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral backup: %v\n", err)
		return 1
	}
	fmt.Printf("backup %s: %s\n", *out, sum)
	return 0
}

// runRestore loads a backup into an empty ensemble through a server's POST /restore
// (tools/backup):
//
//	corral restore --admin 127.0.0.1:8080 --in corral.backup
//
// Exit codes: 0 restored, 1 failed (a bad file or a non-empty target: nothing written), 2 usage.
func runRestore(args []string) int {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	admin := fs.String("admin", "", "admin address (admin.serverAddress:admin.serverPort) of a server of the target ensemble: it does the restore")
	fs.String("to", "", "ignored (the server restores through its own client port); accepted for older scripts")
	in := fs.String("in", "", "the backup file to load")
	adminAuth := adminAuthFlag(fs)
	var auth multiFlag
	fs.Var(&auth, "auth", "scheme:credentials the server adds on the restore's session, e.g. digest:user:password (repeatable)")
	conc := fs.Int("concurrency", 64, "requests the server keeps in flight")
	quiet := fs.Bool("quiet", false, "no progress lines")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, `usage: corral restore --admin HOST:PORT --in FILE [flags]

Loads a file written by corral backup into an EMPTY ensemble (nothing but / and /zookeeper, no
quota; anything else is refused), so that every znode equals the backup: data, ACL, type (container,
TTL) and stat (czxid, mzxid, pzxid, ctime, mtime, version, cversion, aversion), quotas included.
The whole file is checked here first, then sent to the server's POST /restore, which checks it
again as it arrives: a truncated or corrupt one is refused with the byte offset of the problem,
and nothing is written. The server creates the znodes through its own client port and sets
their stats; afterwards every shard's zxid clock is past the largest restored zxid. Ephemerals
are not in a backup. TTL znodes need zookeeper.extendedTypesEnabled=true on the target. Needs an
admin operator, as changes do (docs/operations.md "Admin port").

examples:
  corral restore --admin 127.0.0.1:8080 --in corral.backup
  CORRAL_ADMIN_AUTH=ops:secret corral restore --admin zk1:8080 --in /backups/corral-2026-01-31.backup
  curl -H 'Authorization: digest ops:secret' --data-binary @corral.backup http://zk1:8080/restore

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *admin == "" || *in == "" {
		fmt.Fprintln(os.Stderr, "corral restore: --admin and --in are required")
		fs.Usage()
		return 2
	}
	tc, err := adminTLSConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral restore: %v\n", err)
		return 2
	}
	o := backup.Options{Admin: *admin, AdminAuth: adminauth.FromEnv(*adminAuth), AdminTLS: tc, File: *in,
		Auth: auth, Concurrency: *conc}
	if !*quiet && onTerminal() {
		o.Progress = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sum, err := backup.Restore(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral restore: %v\n", err)
		if errors.Is(err, backup.ErrNotEmpty) {
			fmt.Fprintln(os.Stderr, "(nothing was written)")
		}
		return 1
	}
	fmt.Printf("restored %s: %s, %d ACLs set\n", *in, sum, sum.ACLs)
	return 0
}

// onTerminal reports whether stderr is a terminal (progress lines go there only then).
func onTerminal() bool {
	fi, err := os.Stderr.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

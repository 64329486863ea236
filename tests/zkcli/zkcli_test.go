package zkcli_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/tests/zkcli"
)

func TestMain(m *testing.M) {
	// The corral binary corralproc built for this process goes with it.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		corralproc.RemoveBinary()
		os.Exit(code)
	}))
}

func TestTranscriptAgainstApacheZooKeeper(t *testing.T) {
	if err := zkcli.Available(); err != nil {
		t.Fatalf("zkCli is required: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := apachezk.Start(ctx, apachezk.Options{
		JVMFlags: []string{apachezk.FlagExtendedTypes, apachezk.FlagNoContainerGC},
		Config:   map[string]string{"forceSync": "no"},
	})
	if err != nil {
		t.Fatalf("start Apache ZooKeeper: %v", err)
	}
	defer e.Close()

	began := time.Now()
	first, err := zkcli.Transcript(ctx, e.Addr(0))
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	t.Logf("zkCli run took %v", time.Since(began).Round(time.Millisecond))
	second, err := zkcli.Transcript(ctx, e.Addr(0))
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if first != second {
		t.Fatalf("transcript differs between runs:\n--- first\n%s\n--- second\n%s", first, second)
	}

	// The transcript holds what zkCli showed, normalised.
	for _, want := range []string{
		"> create {base}/a again\nNode already exists: /base/a\n",
		"> create -s {base}/a/seq- s\nCreated /base/a/seq-0000000002\n",
		"> create {base}/a/eph/child x\nEphemerals cannot have children: /base/a/eph/child\n",
		"> create -t 3600000 {base}/ttl t\nCreated /base/ttl\n",
		"> ls {base}/a\n[eph, eseq-0000000003, seq-0000000001, seq-0000000002]\n",
		"> get {base}/a\nhello\n",
		"> set -v 0 {base}/a stale\nversion No is not valid : /base/a\n",
		"> delete {base}/a\nNode not empty: /base/a\n",
		"ephemeralOwner = session-1\n",
		"> addauth digest alice:secret\n> whoami\nAuth scheme: User\ndigest: alice\nip: 127.0.0.1\n",
		"> getAcl {base}/priv\n'digest,'alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=\n: cdrwa\n",
		"> set {base}/priv x\nInsufficient permission : /base/priv\n",
		"> sync {base}/a\nSync is OK\n",
		"> deleteall {base}\n> ls {base}\nNode does not exist: /base\n",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	for _, banned := range []string{"SLF4J", "WATCHER", "UTC", "/zkcli-"} {
		if strings.Contains(first, banned) {
			t.Errorf("transcript not normalised: contains %q", banned)
		}
	}
	if m := regexp.MustCompile(`0x[0-9a-f]*[1-9a-f]`).FindString(first); m != "" {
		t.Errorf("transcript not normalised: contains %q", m)
	}
	if t.Failed() {
		t.Logf("transcript:\n%s", first)
	}
}

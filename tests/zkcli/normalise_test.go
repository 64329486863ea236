package zkcli

import (
	"reflect"
	"testing"
)

func TestSplitAndNormalise(t *testing.T) {
	raw := "SLF4J: Failed to load class \"org.slf4j.impl.StaticLoggerBinder\".\n" +
		"Connecting to 127.0.0.1:2181\nWelcome to ZooKeeper!\nJLine support is disabled\n" +
		"Created /zkcli-x/a\n" +
		"\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n" + // asynchronous, anywhere
		"Node does not exist: /zkcli-mark-x-0\n" +
		"[c, a, b]\ncZxid = 0x1f\nctime = Sat Nov 21 15:58:03 UTC 2026\nmZxid = 0x20\n" +
		"mtime = Sat Nov 21 15:58:04 UTC 2026\npZxid = 0x1f\nephemeralOwner = 0x100000ba4db0001\n" +
		"Node does not exist: /zkcli-mark-x-1\n" +
		"server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\nversion=100000000\n" +
		"ephemeralOwner = 0x0\nephemeralOwner = 0x100000ba4db0001\n" +
		"Node does not exist: /zkcli-mark-x-2\n" +
		"\nWATCHER::\n\nWatchedEvent state:Closed type:None path:null\n"
	sections, err := split(raw, "/zkcli-mark-x-", 3)
	if err != nil {
		t.Fatal(err)
	}
	n := newNormaliser([]string{"/zkcli-x"})
	var got [][]string
	for _, s := range sections {
		got = append(got, n.lines(s))
	}
	want := [][]string{
		{"Created /base/a"},
		{"[a, b, c]", "cZxid = zxid-1", "ctime = <time>", "mZxid = zxid-2", "mtime = <time>", "pZxid = zxid-1", "ephemeralOwner = session-1"},
		{"server.1=127.0.0.1:<port>:<port>:participant;127.0.0.1:<port>", "version=<zxid>", "ephemeralOwner = 0x0", "ephemeralOwner = session-1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if _, err := split(raw, "/zkcli-mark-x-", 4); err == nil {
		t.Fatalf("missing marker not reported")
	}
}

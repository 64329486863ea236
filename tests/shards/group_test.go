package shardstest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/client"
	"github.com/corral/corral/format"
	"github.com/corral/corral/wire"
)

// TestSessionPipelinesAcrossShards: one session pipelines writes round-robin over subtrees on
// all four shards (the everyday pattern of a Kafka-like client without a chroot), and they
// behave as the same requests sent one at a time would, in ZooKeeper's order:
//   - every reply arrives in request order with the result the request alone would have had: a
//     create of a node that an earlier request of the pipeline created fails with NODEEXISTS and
//     the writes around it succeed; a setData of a node created earlier in the pipeline finds it
//     (version 1); a delete of a missing node fails with NONODE;
//   - the reply zxids strictly increase in request order, across shards;
//   - another server reads every node the session created, with its data; the ephemerals are
//     gone once the session closes.
//
// It also checks that the writes ran in groups (server/group.go): a write whose zxid carries
// another shard's tag than its own path's shard was committed by a transaction anchored
// elsewhere. Without groups every write of the pipeline is proposed to its own shard after a
// barrier, and every zxid carries its shard's tag: a server that fell back to the barrier for
// all of them would fail here, not pass slowly.
func TestSessionPipelinesAcrossShards(t *testing.T) {
	c := startEnsemble(t, inProcess)
	addrs := c.Addrs()
	names := namesOn(t, c, "gp", dataShards...)
	tagOf := map[string]int64{}
	for i, n := range names {
		tagOf[n] = int64(i + 1) // placement's tags: data shard i has tag i+1
	}
	waitFormatLevel(t, c.(*inproc), format.Level4)
	zc := connectZK(t, addrs[0])
	for _, n := range names {
		mustCreate(t, zc, "/"+n, "")
	}

	rc := dialRaw(t, addrs[0], client.Options{})
	type reply struct {
		seq  int
		path string
		zxid int64
		err  error
	}
	type request struct {
		desc    string
		top     string // the top-level name the request's path is under
		wantErr error
		send    func(done func(r reply))
	}
	var reqs []request
	created := map[string]string{}   // path -> data
	ephemeral := map[string]string{} // path -> its top-level znode
	const rounds = 12
	for i := 0; i < rounds; i++ {
		for k, n := range names {
			p := fmt.Sprintf("/%s/n%d", n, i)
			data := strconv.Itoa(i*10 + k)
			flags := wire.FlagPersistent
			if i%3 == 2 {
				flags = wire.FlagEphemeral
				ephemeral[p] = "/" + n
			} else {
				created[p] = data
			}
			reqs = append(reqs, request{desc: "create " + p, top: n, send: func(done func(reply)) {
				rc.CreateAsync(p, []byte(data), flags, nil, func(path string, st wire.Stat, err error) {
					done(reply{path: path, zxid: st.Czxid, err: err})
				})
			}})
		}
		if i == 4 {
			// A duplicate of a create earlier in the pipeline, a setData of a node created
			// earlier in it, and a delete of a node that does not exist.
			dup := fmt.Sprintf("/%s/n%d", names[1], 2)
			set := fmt.Sprintf("/%s/n%d", names[2], 3)
			missing := fmt.Sprintf("/%s/none", names[3])
			created[set] = "changed"
			reqs = append(reqs,
				request{desc: "create " + dup + " again", top: names[1], wantErr: wire.ErrNodeExists, send: func(done func(reply)) {
					rc.CreateAsync(dup, nil, wire.FlagPersistent, nil, func(path string, st wire.Stat, err error) {
						done(reply{err: err})
					})
				}},
				request{desc: "setData " + set, top: names[2], send: func(done func(reply)) {
					rc.SetDataAsync(set, []byte("changed"), 0, func(st wire.Stat, err error) {
						if err == nil && st.Version != 1 {
							err = fmt.Errorf("version %d, want 1", st.Version)
						}
						done(reply{zxid: st.Mzxid, err: err})
					})
				}},
				request{desc: "delete " + missing, top: names[3], wantErr: wire.ErrNoNode, send: func(done func(reply)) {
					rc.DeleteAsync(missing, -1, func(err error) { done(reply{err: err}) })
				}},
			)
		}
	}

	var (
		mu      sync.Mutex
		replies []reply
		all     = make(chan struct{})
	)
	for seq, r := range reqs {
		r.send(func(rep reply) {
			mu.Lock()
			defer mu.Unlock()
			rep.seq = seq
			replies = append(replies, rep)
			if len(replies) == len(reqs) {
				close(all)
			}
		})
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d pipelined writes did not all complete", len(reqs))
	}

	mu.Lock()
	defer mu.Unlock()
	var prev int64
	foreign := 0
	for k, rep := range replies {
		r := reqs[k]
		if rep.seq != k {
			t.Fatalf("reply %d is for request %d: replies out of order", k, rep.seq)
		}
		if r.wantErr != nil {
			if !errors.Is(rep.err, r.wantErr) {
				t.Fatalf("request %d (%s): %v, want %v", k, r.desc, rep.err, r.wantErr)
			}
			continue
		}
		if rep.err != nil {
			t.Fatalf("request %d (%s): %v", k, r.desc, rep.err)
		}
		if rep.zxid <= prev {
			t.Fatalf("request %d (%s): zxid %#x not above the previous write's %#x", k, r.desc, rep.zxid, prev)
		}
		prev = rep.zxid
		if rep.zxid&0xff != tagOf[r.top] {
			foreign++
		}
	}
	if foreign == 0 {
		t.Fatalf("all %d writes carry their own shard's zxid tag: none ran in a group", len(reqs))
	}
	t.Logf("%d pipelined writes over %d shards, %d committed by a group anchored on another shard", len(reqs), len(names), foreign)

	// Every node is on another server, with its data; the ephemerals go with the session.
	obs := connectZK(t, addrs[1])
	syncAll(t, obs, "/"+names[0], "/"+names[1], "/"+names[2], "/"+names[3])
	for p, want := range created {
		got, _, err := obs.Get(p)
		if err != nil || string(got) != want {
			t.Fatalf("server 2: get %s = %q, %v; want %q", p, got, err, want)
		}
	}
	for p := range ephemeral {
		if ok, _, err := obs.Exists(p); err != nil || !ok {
			t.Fatalf("server 2: ephemeral %s: exists %v, %v", p, ok, err)
		}
	}
	rc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for p, top := range ephemeral {
		for {
			syncAll(t, obs, top)
			ok, _, err := obs.Exists(p)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ephemeral %s still there after its session closed", p)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// waitFormatLevel waits until every server's session table holds at least level active: a new
// ensemble starts at level 1 and raises it once every server announced what it reads.
func waitFormatLevel(t *testing.T, c *inproc, level format.Level) {
	t.Helper()
	want := fmt.Sprintf("format level=%d ", level)
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < numServers; i++ {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			text, err := c.c.Server(i).MembersText(ctx)
			cancel()
			if err == nil && strings.Contains(text, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d did not reach format level %d: %q, %v", i+1, level, text, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

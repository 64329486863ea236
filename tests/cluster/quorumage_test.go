package clustertest

import (
	"testing"
	"time"

	"github.com/corral/corral/internal/testcluster"
)

// TestStartCatchUpCountsForQuorumAge: the catch-up a server makes before it serves counts as
// each data shard replica's first proof that it reaches its quorum (router.Shard.QuorumAgeAt),
// so the cut-off rule (server/stuck.go) does not take a leaderless moment in the server's first
// seconds for a replica cut off for the whole bound. With tickTime=4000 the bound is 20 s and
// the first refresh round comes 5 s after the start; without the catch-up noted, every replica's
// quorum age is unbounded until then.
func TestStartCatchUpCountsForQuorumAge(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 2, Extra: []string{"tickTime=4000"}})
	started := time.Now()
	for i := 0; i < 3; i++ {
		for _, sh := range cl.Server(i).Router().Shards() {
			if age := sh.QuorumAgeAt(time.Now()); age > time.Since(started)+10*time.Second {
				t.Fatalf("server %d, shard %d: quorum age %v right after the start", i+1, sh.ID, age)
			}
		}
	}
}

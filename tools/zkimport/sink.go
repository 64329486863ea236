package zkimport

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/cluster"
	"github.com/corral/corral/tools/zkdata"
)

// openACL is what nodes are created with, so that a restrictive ACL on a parent cannot stop
// its children from being created; the source ACL is set once the whole tree exists.
var openACL = zk.WorldACL(zk.PermAll)

// Existing says what to do with a znode that already exists in the target.
type Existing int

const (
	// Fail stops the import at the first znode that exists in the target (the default).
	Fail Existing = iota
	// Skip leaves an existing znode as it is (data, ACL and stat) and copies its children.
	Skip
	// Overwrite sets an existing znode's data, ACL and stat to the source's.
	Overwrite
)

// outcome is what create did with a node.
type outcome int

const (
	created outcome = iota
	overwritten
	skipped
)

// create makes n in the target with the source's data and an open ACL; what it does with an
// existing node is existing's choice.
func create(c *zk.Conn, n *Node, existing Existing) (outcome, error) {
	var err error
	switch n.Kind {
	case zkdata.Container:
		_, err = c.CreateContainer(n.Path, n.Data, zk.FlagContainer, openACL)
	case zkdata.TTL:
		_, err = c.CreateTTL(n.Path, n.Data, zk.FlagTTL, openACL, time.Duration(n.TTL)*time.Millisecond)
	default:
		_, err = c.Create(n.Path, n.Data, 0, openACL)
	}
	switch {
	case err == nil:
		return created, nil
	case n.Kind == zkdata.TTL && !errors.Is(err, zk.ErrNodeExists):
		// The usual cause is a target without extended types, which refuses with
		// ZooKeeper's UNIMPLEMENTED (go-zookeeper has no error value for it: "unknown error -6").
		return 0, fmt.Errorf("creating the TTL node %s in the target: %w (a server refuses TTL nodes unless its zoo.cfg sets zookeeper.extendedTypesEnabled=true, as the source's does)", n.Path, err)
	case !errors.Is(err, zk.ErrNodeExists):
		return 0, fmt.Errorf("creating %s in the target: %w", n.Path, err)
	}
	switch existing {
	case Skip:
		return skipped, nil
	case Overwrite:
		if _, err := c.Set(n.Path, n.Data, -1); err != nil {
			return 0, fmt.Errorf("overwriting %s in the target: %w", n.Path, err)
		}
		return overwritten, nil
	}
	return 0, fmt.Errorf("%s exists in the target: import into an empty tree, or pass --skip-existing or --overwrite", n.Path)
}

// sameACL reports whether a and b grant the same permissions, in order.
func sameACL(a, b []zk.ACL) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// statLine is the stat of a copied node as POST /import/stats takes it.
func statLine(n *Node) cluster.StatLine {
	st := &n.Stat
	return cluster.StatLine{Path: n.Path, Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid, Ctime: st.Ctime,
		Mtime: st.Mtime, Version: st.Version, Aversion: st.Aversion, Cversion: storedCversion(st)}
}

// statChunk is how many stat lines go in one request.
const statChunk = 10_000

// PostStats sets the stats of the copied nodes through the target's admin endpoint, in chunks.
// A 409 (the ensemble has not reached the format level that can apply them yet, as right after
// a fresh ensemble starts) is asked again for up to a minute.
func PostStats(ctx context.Context, admin, cred string, tc *tls.Config, lines []cluster.StatLine) error {
	for len(lines) > 0 {
		n := min(len(lines), statChunk)
		var body bytes.Buffer
		enc := json.NewEncoder(&body)
		for i := range lines[:n] {
			enc.Encode(&lines[i])
		}
		if err := postStatChunk(ctx, admin, cred, tc, body.Bytes()); err != nil {
			return err
		}
		lines = lines[n:]
	}
	return nil
}

// AdminURL returns the URL of path on the admin port admin (HTTPS when tc is set) and the
// client to call it with.
func AdminURL(admin, path string, tc *tls.Config) (string, *http.Client) {
	if tc != nil {
		return "https://" + admin + path, &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	}
	return "http://" + admin + path, http.DefaultClient
}

// CreateNew creates n in the target with its data and an open ACL (its own ACL is set later);
// an existing znode is an error.
func CreateNew(c *zk.Conn, n *Node) error {
	_, err := create(c, n, Fail)
	return err
}

func postStatChunk(ctx context.Context, admin, cred string, tc *tls.Config, body []byte) error {
	url, client := AdminURL(admin, "/import/stats", tc)
	deadline := time.Now().Add(time.Minute)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		adminauth.SetHeader(req, cred)
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("setting stats through the admin endpoint %s: %w", admin, err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusConflict && time.Now().Before(deadline):
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
			continue
		case resp.StatusCode != http.StatusOK:
			return fmt.Errorf("setting stats through %s: %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
		}
		var res cluster.StatResult
		if err := json.Unmarshal(msg, &res); err != nil {
			return fmt.Errorf("setting stats through %s: unexpected answer %q: %w", url, msg, err)
		}
		if len(res.Failed) > 0 {
			f := res.Failed[0]
			return fmt.Errorf("setting stats: %d of %d failed, the first %s: %s", len(res.Failed),
				len(res.Failed)+res.Applied, f.Path, f.Error)
		}
		return nil
	}
}

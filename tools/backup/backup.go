package backup

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/cluster"
	"github.com/corral/corral/tools/backupfile"
	"github.com/corral/corral/tools/zkimport"
)

// Options configure a backup or a restore.
type Options struct {
	Admin     string      // a server's admin address (host:port)
	AdminAuth string      // operator credentials (user:password) for it; "" for none (package adminauth)
	AdminTLS  *tls.Config // HTTPS to the admin port (admin.forceHttps); nil: plain HTTP
	File      string      // the backup file: written by Backup, read by Restore
	// Auth lists scheme:credentials pairs the server adds on the restore's session
	// (cluster.RestoreAuthHeader).
	Auth []string
	// Concurrency is how many requests the server keeps in flight for a restore (0: its
	// default, 64).
	Concurrency int
	// Progress, when set, gets a line every second while the work runs.
	Progress io.Writer
}

// Summary is what a backup or restore did.
type Summary struct {
	Znodes  int64 // in the file
	Bytes   int64 // of the file
	MaxZxid int64 // the largest zxid in the file
	Shards  int   // data shards at the cut
	ACLs    int64 // (restore) ACLs set: znodes whose ACL is not world:anyone:cdrwa
	// Stall (backup) is how long the server's cut held every shard's writes.
	Stall time.Duration
	Took  time.Duration
}

func (s Summary) String() string {
	stall := ""
	if s.Stall > 0 {
		stall = fmt.Sprintf(" (writes stalled %s for the cut)", s.Stall.Round(10*time.Microsecond))
	}
	return fmt.Sprintf("%d znodes, %d bytes, %d shards, largest zxid %#x, in %s%s", s.Znodes, s.Bytes, s.Shards,
		s.MaxZxid, s.Took.Round(time.Millisecond), stall)
}

// counter is the progress of a run: znodes and bytes so far.
type counter struct {
	what         string
	nodes, bytes atomic.Int64
}

// progress writes a line every second to w (when not nil) until the returned stop is called.
func (c *counter) progress(w io.Writer) (stop func()) {
	return zkimport.EverySecond(w, func(el time.Duration) string {
		n := c.nodes.Load()
		return fmt.Sprintf("%s %d znodes, %.1f MB (%.0f znodes/s, %s)", c.what, n, float64(c.bytes.Load())/1e6,
			float64(n)/el.Seconds(), el.Round(time.Second))
	})
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Backup writes one consistent cut of the whole namespace to o.File (see the package doc). The
// file is written as File.partial and renamed once complete and checked; on any error nothing
// is left under File.
func Backup(ctx context.Context, o Options) (Summary, error) {
	start := time.Now()
	if o.File == "" {
		return Summary{}, errors.New("no output file")
	}
	resp, err := get(ctx, o)
	if err != nil {
		return Summary{}, err
	}
	defer resp.Body.Close()
	partial := o.File + ".partial"
	f, err := os.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return Summary{}, err
	}
	c := &counter{what: "received"}
	stop := c.progress(o.Progress)
	sum, err := receive(io.TeeReader(countingReader{resp.Body, &c.bytes}, f), c)
	stop()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(partial, o.File)
	}
	if err != nil {
		os.Remove(partial)
		return Summary{}, fmt.Errorf("backup from %s: %w (nothing written to %s)", o.Admin, err, o.File)
	}
	if d, err := os.Open(filepath.Dir(o.File)); err == nil {
		d.Sync() // the rename, durably
		d.Close()
	}
	sum.Bytes = c.bytes.Load()
	sum.Stall, _ = time.ParseDuration(resp.Header.Get(cluster.CutStallHeader))
	sum.Took = time.Since(start)
	return sum, nil
}

// levelWait is how long a backup asks again while the server answers 409 (the ensemble has not
// reached format level 6 (LevelCut) yet, as for a few seconds after a fresh ensemble starts).
const levelWait = 15 * time.Second

// get asks for GET /backup and returns the 200 answer.
func get(ctx context.Context, o Options) (*http.Response, error) {
	url, client := zkimport.AdminURL(o.Admin, "/backup", o.AdminTLS)
	deadline := time.Now().Add(levelWait)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		adminauth.SetHeader(req, o.AdminAuth)
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("asking %s for a backup: %w", o.Admin, err)
		}
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict || time.Now().After(deadline) {
			return nil, fmt.Errorf("asking %s for a backup: %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// receive reads and checks a whole file from r, counting znodes into c.
func receive(r io.Reader, c *counter) (Summary, error) {
	rd, err := backupfile.NewReader(r)
	if err != nil {
		return Summary{}, err
	}
	for {
		_, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Summary{}, err
		}
		c.nodes.Add(1)
	}
	t := rd.Trailer()
	return Summary{Znodes: t.Nodes, MaxZxid: t.MaxZxid, Shards: len(rd.Header().Shards)}, nil
}

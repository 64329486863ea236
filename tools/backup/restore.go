package backup

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/cluster"
	"github.com/corral/corral/tools/zkimport"
)

// ErrNotEmpty: the target ensemble holds znodes; a restore writes only into an empty one.
var ErrNotEmpty = cluster.ErrRestoreNotEmpty

// Restore loads o.File into the empty ensemble of the server at o.Admin (see the package doc):
// it checks the whole file, then uploads it to POST /restore, which checks it again before it
// writes anything. A failure half-way leaves what was created (restore into a fresh ensemble
// again).
func Restore(ctx context.Context, o Options) (Summary, error) {
	start := time.Now()
	c := &counter{what: "checked"}
	stop := c.progress(o.Progress)
	sum, err := scan(o.File, c)
	stop()
	if err != nil {
		return Summary{}, fmt.Errorf("%s: %w (nothing restored)", o.File, err)
	}
	resp, err := post(ctx, o)
	if err != nil {
		return sum, err
	}
	defer resp.Body.Close()
	last, err := follow(resp.Body, o.Progress)
	sum.ACLs = last.ACLs
	sum.Took = time.Since(start)
	if err != nil {
		return sum, fmt.Errorf("restore through %s: %w", o.Admin, err)
	}
	return sum, nil
}

// scan reads and checks the file, counting znodes into c.
func scan(file string, c *counter) (Summary, error) {
	f, err := os.Open(file)
	if err != nil {
		return Summary{}, err
	}
	defer f.Close()
	sum, err := receive(countingReader{f, &c.bytes}, c)
	sum.Bytes = c.bytes.Load()
	return sum, err
}

// post uploads the file to POST /restore and returns the 200 answer. It asks again while the
// server answers 409 with Retry-After (the ensemble has not reached format level 6 yet).
func post(ctx context.Context, o Options) (*http.Response, error) {
	url, client := zkimport.AdminURL(o.Admin, "/restore", o.AdminTLS)
	if o.Concurrency > 0 {
		url += fmt.Sprintf("?concurrency=%d", o.Concurrency)
	}
	deadline := time.Now().Add(levelWait)
	for {
		f, err := os.Open(o.File)
		if err != nil {
			return nil, err
		}
		c := &counter{what: "sent"}
		stop := c.progress(o.Progress)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, countingReader{f, &c.bytes})
		if err != nil {
			f.Close()
			stop()
			return nil, err
		}
		if fi, err := f.Stat(); err == nil {
			req.ContentLength = fi.Size()
		}
		req.Header.Set("Content-Type", "application/octet-stream")
		adminauth.SetHeader(req, o.AdminAuth)
		for _, a := range o.Auth {
			req.Header.Add(cluster.RestoreAuthHeader, a)
		}
		resp, err := client.Do(req)
		stop()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("sending the backup to %s: %w", o.Admin, err)
		}
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		text := strings.TrimSpace(string(msg))
		retry := resp.StatusCode == http.StatusConflict && resp.Header.Get("Retry-After") != ""
		switch {
		case resp.StatusCode == http.StatusConflict && strings.Contains(text, ErrNotEmpty.Error()):
			return nil, fmt.Errorf("%w (%s: %s)", ErrNotEmpty, url, text)
		case !retry || time.Now().After(deadline):
			return nil, fmt.Errorf("restore through %s: %s: %s", url, resp.Status, text)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// follow reads the JSON lines of a POST /restore answer, writing the progress to w (when not
// nil), and returns the last line: an error unless it says the restore is done.
func follow(body io.Reader, w io.Writer) (cluster.RestoreLine, error) {
	var last cluster.RestoreLine
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			return last, fmt.Errorf("unexpected answer %q: %w", sc.Bytes(), err)
		}
		if w != nil && !last.Done && last.Error == "" {
			fmt.Fprintf(w, "%s %d of %d znodes (%d ACLs)\n", last.Phase, last.Znodes, last.Total, last.ACLs)
		}
	}
	switch {
	case sc.Err() != nil:
		return last, fmt.Errorf("reading the answer: %w (the restore may have stopped half-way)", sc.Err())
	case last.Error != "":
		return last, fmt.Errorf("stopped half-way (%s %d of %d znodes): %s; what was created stays: restore into a fresh ensemble", last.Phase, last.Znodes, last.Total, last.Error)
	case !last.Done:
		return last, errors.New("the answer ended before the restore did (the restore may have stopped half-way)")
	}
	return last, nil
}

package corralproc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"time"

	"github.com/corral/corral/internal/procutil"
)

// AddObserver creates one more server, index Size() (myid Size()+1), in the ensemble's
// directory and starts it as an observer that joins the running ensemble online: its zoo.cfg
// names the other servers as they are and itself as "server.N=...:observer", with
// peerType=observer (docs/operations.md "Observers", added online). The other servers' zoo.cfg
// are left as they are: an online add does not need them changed. The new server waits until a
// member adds it (POST /members/add?id=N&raft=<RaftAddr>&observer=true) and then catches up,
// so AddObserver does not wait for it to serve: call WaitReady after the add.
//
// It returns the new server's index. It may run while other goroutines use the ensemble; Size
// counts the new server from then on.
func (e *Ensemble) AddObserver() (int, error) {
	ports, err := procutil.FreePorts(4)
	if err != nil {
		return 0, err
	}
	var idx int
	e.Locked(func() { idx, err = e.addObserverLocked(ports) })
	return idx, err
}

// addObserverLocked is AddObserver inside e.Locked.
func (e *Ensemble) addObserverLocked(ports []int) (int, error) {
	if e.ClosedLocked() {
		return 0, errors.New("corralproc: ensemble closed")
	}
	myid := len(e.servers) + 1
	s := &server{
		Member:       &procutil.Member{Dir: filepath.Join(e.Dir(), "s"+strconv.Itoa(myid)), ClientPort: ports[0]},
		myid:         myid,
		peerPort:     ports[1],
		electionPort: ports[2],
		adminPort:    ports[3],
	}
	e.servers = append(e.servers, s)
	e.AddLocked(s.Member)
	cfg := maps.Clone(e.opts.ServerConfig)
	if cfg == nil {
		cfg = map[int]map[string]string{}
	}
	own := maps.Clone(cfg[s.myid-1])
	if own == nil {
		own = map[string]string{}
	}
	own["peerType"] = "observer"
	own["server."+strconv.Itoa(s.myid)] = fmt.Sprintf("127.0.0.1:%d:%d:observer", s.peerPort, s.electionPort)
	cfg[s.myid-1] = own
	e.opts.ServerConfig = cfg
	if err := e.writeConfigLocked(s); err != nil {
		return 0, err
	}
	if err := e.launchLocked(s); err != nil {
		return 0, err
	}
	return s.myid - 1, nil
}

// RaftAddr is server i's Raft address (host:peerPort), as POST /members/add takes it.
func (e *Ensemble) RaftAddr(i int) string {
	return "127.0.0.1:" + strconv.Itoa(e.server(i).peerPort)
}

// StartOne starts the stopped server i and waits until it serves (answers `ruok` with `imok`),
// without waiting for the other servers as Start does: for a restart while another server is
// on its way out of the ensemble (it closes its client port once its removal began) or cannot
// serve yet. It fails early, with the tail of the server's log, when the process exits. Like
// Start, a server that loses a port race (another process took its client or admin port while
// it was down) is relaunched with fresh ones (see Addr).
func (e *Ensemble) StartOne(ctx context.Context, i int) error {
	wctx, cancel := context.WithTimeout(ctx, e.opts.StartTimeout)
	defer cancel()
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if err = e.launch(i, attempt > 0); err != nil {
			return err
		}
		err = e.waitOne(wctx, i)
		if err == nil || !errors.Is(err, ErrPortInUse) || wctx.Err() != nil {
			return err
		}
		_ = e.Kill(i)
	}
	return err
}

// waitOne polls until server i answers `ruok` with `imok`; a process that exits fails it, with
// ErrPortInUse when its log says a port was taken (also while it runs: a taken admin port does
// not stop it).
func (e *Ensemble) waitOne(ctx context.Context, i int) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		p := e.Procs()[i]
		if p == nil {
			return fmt.Errorf("%w: server %d", ErrNotRunning, i)
		}
		if p.Exited() {
			if e.portInUse(i) {
				return e.explain(fmt.Errorf("%w: server %d (myid %d) exited: %v", ErrPortInUse, i, i+1, p.Err()), i)
			}
			return e.explain(fmt.Errorf("%w: server %d (myid %d): %v", ErrExited, i, i+1, p.Err()), i)
		}
		if e.portInUse(i) {
			// The admin port failing leaves the process running.
			return e.explain(fmt.Errorf("%w: server %d (myid %d)", ErrPortInUse, i, i+1), i)
		}
		qctx, qcancel := context.WithTimeout(ctx, time.Second)
		out, err := FourLetterWord(qctx, e.Addr(i), "ruok")
		qcancel()
		if err == nil && out == "imok" {
			return nil
		}
		select {
		case <-ctx.Done():
			return e.explain(fmt.Errorf("%w: server %d (myid %d): %v (ruok: %q)", ErrNotReady, i, i+1, err, out), i)
		case <-tick.C:
		}
	}
}

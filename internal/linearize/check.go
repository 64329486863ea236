package linearize

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

// The package's errors. Validators wrap the first three with the operations involved; test
// with errors.Is.
var (
	// ErrLostAcknowledgedWrite: a synced read (a final read, typically) does not reflect a write
	// the client was told took effect before the read began.
	ErrLostAcknowledgedWrite = errors.New("linearize: acknowledged write lost")
	// ErrReadWentBack: a session observed a znode at an older (czxid, version, mzxid) than it
	// had observed before.
	ErrReadWentBack = errors.New("linearize: session read went back in time")
	// ErrNoFinalRead: a path was written but never read (synced, with a definite outcome) after
	// all its writes returned, so lost writes cannot be ruled out.
	ErrNoFinalRead = errors.New("linearize: no final read of a written path")
	// ErrAmbiguousHistory: two writes of one path wrote the same data, so a read does not name
	// the write it observed.
	ErrAmbiguousHistory = errors.New("linearize: writes are not identified by their data")
	// ErrNotLinearizable: porcupine found no linearization.
	ErrNotLinearizable = errors.New("linearize: history is not linearizable")
	// ErrCheckTimeout: porcupine neither found a linearization nor ruled one out in time.
	ErrCheckTimeout = errors.New("linearize: linearizability check timed out")
)

// VisualizationDirEnv names the environment variable with the directory Check writes
// visualizations to (default: os.TempDir()).
const VisualizationDirEnv = "CORRAL_LINEARIZE_DIR"

// CheckInfo describes a Check.
type CheckInfo struct {
	Result porcupine.CheckResult
	// Checked operations were given to porcupine; of those, UnknownWrites had an unknown
	// outcome. Left out were plain reads, reads of unknown outcome and Failed operations.
	Checked, UnknownWrites, LeftOut int
	// Paths is the number of partitions.
	Paths   int
	Elapsed time.Duration
	// Visualization is the HTML file porcupine's visualization was written to when the result
	// was not Ok; VisualizationErr says why it could not be written.
	Visualization    string
	VisualizationErr error
}

// Err is nil when the history is linearizable, else ErrNotLinearizable or ErrCheckTimeout
// wrapped with the summary.
func (i CheckInfo) Err() error {
	switch i.Result {
	case porcupine.Ok:
		return nil
	case porcupine.Illegal:
		return fmt.Errorf("%w: %s", ErrNotLinearizable, i)
	default:
		return fmt.Errorf("%w: %s", ErrCheckTimeout, i)
	}
}

func (i CheckInfo) String() string {
	s := fmt.Sprintf("%s: %d operations on %d paths checked in %v (%d writes of unknown outcome), %d left out",
		i.Result, i.Checked, i.Paths, i.Elapsed.Round(time.Millisecond), i.UnknownWrites, i.LeftOut)
	if i.Visualization != "" {
		s += "; visualization: " + i.Visualization
	}
	if i.VisualizationErr != nil {
		s += fmt.Sprintf("; visualization not written: %v", i.VisualizationErr)
	}
	return s
}

// Operations converts the linearizable part of h to porcupine operations: every write, and every
// synced read with a definite outcome. It returns how many operations it left out.
func Operations(h History) (ops []porcupine.Operation, leftOut int) {
	for _, op := range h {
		r := op.Output.Result
		if r == Failed || (op.Input.Kind == Get && (r == Unknown || !op.Input.Synced)) {
			leftOut++
			continue
		}
		ret := op.Return
		if r == Unknown {
			ret = Open
		}
		ops = append(ops, porcupine.Operation{
			ClientId: op.Client,
			Input:    op.Input,
			Call:     op.Call,
			Output:   op.Output,
			Return:   ret,
			Metadata: op.Session,
		})
	}
	return ops, leftOut
}

// Check checks that the linearizable part of h (see Operations) is linearizable under Model,
// giving porcupine at most timeout (0: no limit). It returns true only for porcupine.Ok; for
// Illegal or Unknown (timed out) it writes porcupine's visualization to a file named in the info.
func Check(h History, timeout time.Duration) (bool, CheckInfo) {
	ops, leftOut := Operations(h)
	info := CheckInfo{Checked: len(ops), LeftOut: leftOut, Paths: len(partitionByPath(ops))}
	for _, op := range ops {
		if op.Output.(Output).Result == Unknown {
			info.UnknownWrites++
		}
	}
	start := time.Now()
	res, lin := porcupine.CheckOperationsVerbose(Model, ops, timeout)
	info.Elapsed = time.Since(start)
	info.Result = res
	if res == porcupine.Ok {
		return true, info
	}
	info.Visualization, info.VisualizationErr = visualize(lin)
	return false, info
}

func visualize(lin porcupine.LinearizationInfo) (string, error) {
	dir := os.Getenv(VisualizationDirEnv)
	f, err := os.CreateTemp(dir, "corral-linearize-*.html")
	if err != nil {
		return "", err
	}
	path := f.Name()
	f.Close()
	if err := porcupine.VisualizePath(Model, lin, path); err != nil {
		return path, err
	}
	return path, nil
}

// Package kazoo_test runs kazoo (the Python ZooKeeper client, Debian's
// python3-kazoo) recipes against a ZooKeeper-protocol server and compares
// the canonical transcript printed by recipes.py. A correct server produces
// exactly Apache ZooKeeper's transcript: Corral's tests compare against
// RunRecipes on an apachezk oracle.
package kazoo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/corralproc"
)

// Python is the interpreter that has kazoo (Debian's python3-kazoo).
const Python = "/usr/bin/python3"

func TestMain(m *testing.M) {
	// The corral binary corralproc built for this process goes with it.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		corralproc.RemoveBinary()
		os.Exit(code)
	}))
}

// scriptPath is recipes.py next to this file.
func scriptPath() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate recipes.py")
	}
	return filepath.Join(filepath.Dir(file), "recipes.py"), nil
}

// KazooAvailable says why kazoo cannot run, or nil.
func KazooAvailable() error {
	out, err := exec.Command(Python, "-c", "import kazoo.client").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kazoo is not importable by %s (%v: %s); %s", Python, err, bytes.TrimSpace(out), apachezk.InstallHint)
	}
	return nil
}

var chrootSeq atomic.Int64

// RunRecipes runs recipes.py against connect (a ZooKeeper connect string)
// under a fresh chroot and returns its JSON transcript. It fails t if the
// script fails or does not finish within two minutes.
func RunRecipes(t testing.TB, connect string) string {
	t.Helper()
	began := time.Now()
	out, err := runRecipes(connect, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recipes.py against %s took %v", connect, time.Since(began).Round(time.Millisecond))
	return out
}

// runRecipes is RunRecipes without t, for use from other goroutines. The
// second client uses connectB if it is not empty.
func runRecipes(connect, connectB string) (string, error) {
	if err := KazooAvailable(); err != nil {
		return "", err
	}
	script, err := scriptPath()
	if err != nil {
		return "", err
	}
	chroot := fmt.Sprintf("kazoo-%d-%d-%d", os.Getpid(), time.Now().UnixNano(), chrootSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{script, connect, chroot}
	if connectB != "" {
		args = append(args, connectB)
	}
	cmd := exec.CommandContext(ctx, Python, args...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("recipes.py %s: %v (after %v)\nstderr:\n%s\nstdout:\n%s", strings.Join(args[1:], " "), err,
			time.Since(began).Round(time.Millisecond), stderr.String(), stdout.String())
	}
	if !json.Valid(stdout.Bytes()) {
		return "", fmt.Errorf("recipes.py printed no valid JSON:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func startZK(t *testing.T) *apachezk.Ensemble {
	t.Helper()
	if err := apachezk.Available(); err != nil {
		t.Fatalf("Apache ZooKeeper is required: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := apachezk.Start(ctx, apachezk.Options{Config: map[string]string{"forceSync": "no"}})
	if err != nil {
		t.Fatalf("start Apache ZooKeeper: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// entries parses a transcript into label → value (the last value of a
// repeated label wins; tests only look at unique ones).
func entries(t *testing.T, transcript string) map[string]string {
	t.Helper()
	var list [][2]json.RawMessage
	if err := json.Unmarshal([]byte(transcript), &list); err != nil {
		t.Fatalf("transcript: %v", err)
	}
	m := map[string]string{}
	for _, e := range list {
		var label string
		if err := json.Unmarshal(e[0], &label); err != nil {
			t.Fatalf("label: %v", err)
		}
		var v any
		if err := json.Unmarshal(e[1], &v); err != nil {
			t.Fatalf("value: %v", err)
		}
		compact, _ := json.Marshal(v)
		m[label] = string(compact)
	}
	return m
}

func TestRecipesAgainstApacheZooKeeper(t *testing.T) {
	e := startZK(t)
	first := RunRecipes(t, e.ConnectString())
	second := RunRecipes(t, e.ConnectString())
	if first != second {
		t.Fatalf("transcript is not deterministic:\nfirst:\n%s\nsecond:\n%s", first, second)
	}
	got := entries(t, first)
	for label, want := range map[string]string{
		"seq 2":                            `"/crud/s-0000000003"`,
		"child of ephemeral":               `["error","NoChildrenForEphemeralsError"]`,
		"txn failed":                       `["RolledBackError","BadVersionError","RuntimeInconsistency"]`,
		"lock contenders":                  `["alpha","beta"]`,
		"lock b acquired":                  `[true]`,
		"election":                         `[["alpha leads",["alpha"]],["while alpha leads",["alpha","beta"]],["beta leads",["beta"]]]`,
		"barrier released":                 `[true]`,
		"double barrier entered":           `[true,true]`,
		"counter value":                    `13`,
		"party members":                    `["alpha","beta"]`,
		"queue order":                      `["high","mid","low","low2"]`,
		"locking queue b get skips locked": `"z"`,
		"ephemerals after close":           `[]`,
		"watch events":                     `[["CREATED","/watch/n"],["CHANGED","/watch"],["CHILD","/watch"],["DELETED","/watch/m"]]`,
		"set_acls stale":                   `["error","BadVersionError"]`,
		"create2 ephemeral sequential":     `["/crud/c2e-0000000007",{"aversion":0,"created==modified":true,"cversion":0,"dataLength":0,"numChildren":0,"owner":"self","pzxid==czxid":true,"version":0}]`,
		"locking queue get empty":          `null`,
		"semaphore holders":                `["alpha","beta"]`,
	} {
		if got[label] != want {
			t.Errorf("%s = %s, want %s", label, got[label], want)
		}
	}
	if len(got) < 80 {
		t.Errorf("transcript has only %d distinct entries", len(got))
	}
}

package corralproc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral/corral/internal/testknobs"
)

// ModulePath is the module whose ./cmd/corral Binary builds.
const ModulePath = "github.com/corral/corral"

// buildDirPrefix names this package's build directories in os.TempDir():
// corralproc-bin-<pid>-<random>.
const buildDirPrefix = "corralproc-bin-"

// build is one kind of binary this package builds once per process.
type build struct {
	mu   sync.Mutex
	path string   // set once a build succeeded
	name string   // its file name, in the shared cache directory and the private copy's
	tags []string // go build -tags
}

var (
	built        = build{name: "corral"}
	builtTesting = build{name: "corral-testing", tags: []string{testknobs.Tag}}
)

// Binary returns a corral binary built from the current source: the first
// call in a process runs `go build ./cmd/corral` in the module root (`go env
// GOMOD` from the working directory, which must be inside ModulePath) and
// copies the result into a private temporary directory; later calls return
// the same path. A failed build is not remembered, so the next call tries
// again. ctx bounds the build.
//
// The build goes to a per-checkout output file in the user's cache
// directory, under an exclusive file lock, because `go build -o` skips the
// link (seconds for corral) when that file is already up to date; every test
// process still runs `go build`, so it never gets a stale binary, and its
// private copy does not change under it if another process rebuilds later.
func Binary(ctx context.Context) (string, error) { return built.get(ctx) }

// TestingBinary is Binary built with -tags corraltesting: a server that reads test knobs from
// its environment (package internal/testknobs). Start uses it when Options ask for knobs.
func TestingBinary(ctx context.Context) (string, error) { return builtTesting.get(ctx) }

func (b *build) get(ctx context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.path != "" {
		return b.path, nil
	}
	goTool, root, err := buildTools(ctx)
	if err != nil {
		return "", err
	}
	sweepBuildDirs()
	dir, err := os.MkdirTemp("", buildDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("corralproc: %w", err)
	}
	bin := filepath.Join(dir, b.name)
	if err := buildShared(ctx, goTool, root, bin, b.name, b.flags()...); err != nil {
		var be *buildError
		if !errors.As(err, &be) {
			// No usable cache directory or lock: build straight into dir.
			os.Remove(bin)
			err = goBuild(ctx, goTool, root, bin, b.flags()...)
		}
		if err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	b.path = bin
	return bin, nil
}

func (b *build) flags() []string {
	if len(b.tags) == 0 {
		return nil
	}
	return []string{"-tags", strings.Join(b.tags, ",")}
}

// remove deletes the binary get built, if any.
func (b *build) remove() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.path == "" {
		return nil
	}
	err := os.RemoveAll(filepath.Dir(b.path))
	b.path = ""
	return err
}

// BinaryWithTags builds ./cmd/corral with the build tags into a new directory of the caller's
// (dir) and returns its path: a binary that differs from Binary's, such as the stand-in for a
// newer version built with -tags formatnext (package format).
func BinaryWithTags(ctx context.Context, dir string, tags ...string) (string, error) {
	goTool, root, err := buildTools(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "corral-"+strings.Join(tags, "-"))
	if err := goBuild(ctx, goTool, root, bin, "-tags", strings.Join(tags, ",")); err != nil {
		return "", err
	}
	return bin, nil
}

// buildTools finds the go tool and the module root to build ./cmd/corral in.
func buildTools(ctx context.Context) (goTool, root string, err error) {
	if root, err = ModuleRoot(ctx); err != nil {
		return "", "", err
	}
	if goTool, err = exec.LookPath("go"); err != nil {
		return "", "", fmt.Errorf("corralproc: no go tool on PATH to build ./cmd/corral (set Options.Binary): %w", err)
	}
	return goTool, root, nil
}

// goBuild runs `go build [flags] -o out ./cmd/corral` in root.
func goBuild(ctx context.Context, goTool, root, out string, flags ...string) error {
	args := append(append([]string{"build"}, flags...), "-o", out, "./cmd/corral")
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as `make build`: shares its build cache
	began := time.Now()
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("corralproc: go build ./cmd/corral in %s: %v (after %v)\n%s",
			root, err, time.Since(began).Round(time.Millisecond), bytes.TrimSpace(msg))
	}
	return nil
}

// buildShared builds into the shared output file of this checkout named name
// while holding its lock, then copies it to bin. A build error is returned as
// is (and not retried by the caller's fallback, which would fail the same way).
func buildShared(ctx context.Context, goTool, root, bin, name string, flags ...string) error {
	cache, err := os.UserCacheDir()
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(root))
	shared := filepath.Join(cache, "corralproc", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(shared, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(shared, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	out := filepath.Join(shared, name)
	if err := goBuild(ctx, goTool, root, out, flags...); err != nil {
		return &buildError{err}
	}
	return copyExecutable(out, bin)
}

// buildError is a failed `go build`, as opposed to trouble with the shared
// cache directory.
type buildError struct{ err error }

func (e *buildError) Error() string { return e.err.Error() }
func (e *buildError) Unwrap() error { return e.err }

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}

// ModuleRoot returns the directory of go.mod of the module the working
// directory belongs to, and checks that it is Corral's.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("corralproc: go env GOMOD: %w (set Options.Binary)", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("corralproc: the working directory is not inside a Go module; set Options.Binary")
	}
	f, err := os.Open(gomod)
	if err != nil {
		return "", fmt.Errorf("corralproc: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			if m = strings.Trim(strings.TrimSpace(m), `"`); m != ModulePath {
				return "", fmt.Errorf("corralproc: %s is module %q, not %s; set Options.Binary", gomod, m, ModulePath)
			}
			return filepath.Dir(gomod), nil
		}
	}
	return "", fmt.Errorf("corralproc: no module line in %s", gomod)
}

// sweepBuildDirs removes the build directories of processes that no longer
// exist (tests that were killed before they could clean up).
func sweepBuildDirs() {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), buildDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		os.RemoveAll(filepath.Join(tmp, e.Name()))
	}
}

// alive reports whether a process with this id exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// RemoveBinary deletes the binaries Binary and TestingBinary built, if any,
// so that a TestMain can clean up after m.Run; a later call builds again.
// Build directories left behind by processes that died are swept by the next
// build in any process.
func RemoveBinary() error {
	return errors.Join(built.remove(), builtTesting.remove())
}

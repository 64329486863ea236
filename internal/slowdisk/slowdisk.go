package slowdisk

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// blkioRoot is where the blkio controller of cgroup v1 is mounted.
	blkioRoot = "/sys/fs/cgroup/blkio"
	// prefix names the directories and control groups of the package, followed by the pid of
	// the process that made them.
	prefix = "corral-slowdisk-"
)

// Available reports why the package cannot make a slow disk here, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("slowdisk: needs root (loop device, mount, cgroup)")
	}
	for _, cmd := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return fmt.Errorf("slowdisk: %w", err)
		}
	}
	if _, err := os.Stat(filepath.Join(blkioRoot, "blkio.throttle.write_iops_device")); err != nil {
		return fmt.Errorf("slowdisk: no cgroup v1 blkio controller with throttling: %w", err)
	}
	return nil
}

// Disk is a file system on a loop device of its own and a control group whose processes' writes
// to it can be throttled. Methods are safe for concurrent use.
type Disk struct {
	// Dir is where the file system is mounted.
	Dir string

	mu      sync.Mutex
	base    string // the directory holding the backing file and Dir
	loop    string // the loop device, /dev/loopN
	dev     string // its major:minor
	cgroup  string // the control group's directory
	mounted bool
}

// New makes a disk of size bytes (a sparse backing file: it takes the space it is written)
// with an empty ext4 file system, mounted at Disk.Dir, and its control group, with no process
// in it and no limit. Close removes it all.
func New(size int64) (*Disk, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	Sweep()
	base, err := os.MkdirTemp("", prefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, err
	}
	d := &Disk{Dir: filepath.Join(base, "mnt"), base: base}
	fail := func(err error) (*Disk, error) {
		if cerr := d.Close(); cerr != nil {
			err = fmt.Errorf("%w (and cleaning up: %v)", err, cerr)
		}
		return nil, err
	}
	img := filepath.Join(base, "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		return fail(err)
	}
	if err := os.Truncate(img, size); err != nil {
		return fail(err)
	}
	out, err := run("losetup", "--find", "--show", img)
	if err != nil {
		return fail(err)
	}
	d.loop = strings.TrimSpace(out)
	dev, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(d.loop), "dev"))
	if err != nil {
		return fail(fmt.Errorf("slowdisk: device number of %s: %w", d.loop, err))
	}
	d.dev = strings.TrimSpace(string(dev))
	// Inode tables and journal are written now rather than by a kernel thread during the test.
	if _, err := run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", d.loop); err != nil {
		return fail(err)
	}
	if err := os.Mkdir(d.Dir, 0o755); err != nil {
		return fail(err)
	}
	if _, err := run("mount", d.loop, d.Dir); err != nil {
		return fail(err)
	}
	d.mounted = true
	cg := filepath.Join(blkioRoot, filepath.Base(base))
	if err := os.Mkdir(cg, 0o755); err != nil {
		return fail(fmt.Errorf("slowdisk: %w", err))
	}
	d.cgroup = cg
	return d, nil
}

// Device is the loop device and its major:minor number, for the log.
func (d *Disk) Device() string { return d.loop + " (" + d.dev + ")" }

// Add places process pid, all its threads, in the disk's control group; threads it starts
// later are in it too.
func (d *Disk) Add(pid int) error {
	return d.write("cgroup.procs", strconv.Itoa(pid))
}

// Throttle limits the writes of the group's processes to the disk to iops write operations per
// second (each bio counts as one, whatever its size); 0 lifts the limit. Writes already waiting
// are released at the new rate.
func (d *Disk) Throttle(iops int) error {
	return d.write("blkio.throttle.write_iops_device", d.dev+" "+strconv.Itoa(iops))
}

// Writes is the number of write operations the group's processes submitted to the disk so far.
func (d *Disk) Writes() (int64, error) {
	d.mu.Lock()
	cg := d.cgroup
	d.mu.Unlock()
	data, err := os.ReadFile(filepath.Join(cg, "blkio.throttle.io_serviced"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == d.dev && f[1] == "Write" {
			return strconv.ParseInt(f[2], 10, 64)
		}
	}
	return 0, nil // no write yet
}

// Measure writes 4 KB to a file on the disk n times with O_DSYNC (each write waits for its
// fdatasync), from a dd process placed in the disk's control group (so under its limit, sharing
// it with the group's processes), and returns the mean time of a write.
//
// The measurement runs in a process of its own, not in a thread of the caller moved to the
// group: such a thread would have to exit afterwards, and a thread's exit sends the
// parent-death signal (Pdeathsig) to every child process it started, servers included.
func (d *Disk) Measure(n int) (time.Duration, error) {
	d.mu.Lock()
	cg := d.cgroup
	d.mu.Unlock()
	if cg == "" {
		return 0, errors.New("slowdisk: closed")
	}
	file := filepath.Join(d.Dir, ".slowdisk-measure")
	defer os.Remove(file)
	out, err := run("sh", "-c", `echo $$ > "$1" && exec dd if=/dev/zero of="$2" bs=4k count="$3" oflag=dsync 2>&1`,
		"sh", filepath.Join(cg, "cgroup.procs"), file, strconv.Itoa(n))
	if err != nil {
		return 0, err
	}
	// The last line: "N bytes (…) copied, S s, R MB/s".
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Split(lines[len(lines)-1], ", ")
	if len(f) < 2 {
		return 0, fmt.Errorf("slowdisk: dd said %q", out)
	}
	secs, err := strconv.ParseFloat(strings.TrimSuffix(f[len(f)-2], " s"), 64)
	if err != nil {
		return 0, fmt.Errorf("slowdisk: dd said %q: %w", out, err)
	}
	return time.Duration(secs * float64(time.Second) / float64(max(n, 1))), nil
}

func (d *Disk) write(file, value string) error {
	d.mu.Lock()
	cg := d.cgroup
	d.mu.Unlock()
	if cg == "" {
		return errors.New("slowdisk: closed")
	}
	if err := os.WriteFile(filepath.Join(cg, file), []byte(value), 0); err != nil {
		return fmt.Errorf("slowdisk: %w", err)
	}
	return nil
}

// Close removes the disk: it moves processes still in the control group back to the root group
// and removes the group, unmounts the file system (lazily if it is still in use: a process
// holding files there keeps it until it exits), detaches the loop device and deletes the
// backing file. It may be called more than once; it returns what it could not undo.
func (d *Disk) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	if d.cgroup != "" {
		errs = append(errs, removeGroup(d.cgroup))
		d.cgroup = ""
	}
	if d.mounted {
		if err := unmount(d.Dir); err != nil {
			errs = append(errs, err)
		}
		d.mounted = false
	}
	if d.loop != "" {
		// After a lazy unmount the device is still busy; detaching it then marks it to be
		// detached when its last user goes.
		if _, err := run("losetup", "--detach", d.loop); err != nil {
			errs = append(errs, err)
		}
		d.loop = ""
	}
	if d.base != "" {
		if err := os.RemoveAll(d.base); err != nil {
			errs = append(errs, err)
		}
		d.base = ""
	}
	return errors.Join(errs...)
}

// removeGroup moves every thread of group cg to the root group and removes cg.
func removeGroup(cg string) error {
	var err error
	for try := 0; try < 20; try++ {
		if data, rerr := os.ReadFile(filepath.Join(cg, "tasks")); rerr == nil {
			for _, tid := range strings.Fields(string(data)) {
				os.WriteFile(filepath.Join(blkioRoot, "tasks"), []byte(tid), 0)
			}
		}
		if err = os.Remove(cg); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond) // a thread exiting still counts for a moment
	}
	return fmt.Errorf("slowdisk: remove control group: %w", err)
}

// unmount unmounts dir, waiting a little for its users to go, then lazily.
func unmount(dir string) error {
	var err error
	for try := 0; try < 10; try++ {
		if _, err = run("umount", dir); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, lerr := run("umount", "--lazy", dir); lerr != nil {
		return fmt.Errorf("%w; lazily: %v", err, lerr)
	}
	return nil
}

// Sweep removes the control groups, mounts, loop devices and directories of the package that
// test processes no longer running left behind (killed before they could clean up).
func Sweep() {
	dead := func(name string) bool {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			return false
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() {
			return false
		}
		err = syscall.Kill(pid, 0)
		return err != nil && !errors.Is(err, syscall.EPERM)
	}
	if entries, err := os.ReadDir(blkioRoot); err == nil {
		for _, e := range entries {
			if e.IsDir() && dead(e.Name()) {
				removeGroup(filepath.Join(blkioRoot, e.Name()))
			}
		}
	}
	// A left directory holds disk.img and mnt: unmount mnt, detach the loop devices backed by
	// disk.img, then remove the directory if nothing is mounted there any more.
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !dead(e.Name()) {
			continue
		}
		base := filepath.Join(tmp, e.Name())
		mnt := filepath.Join(base, "mnt")
		if mounted(mnt) {
			run("umount", "--lazy", mnt)
		}
		if out, err := run("losetup", "--associated", filepath.Join(base, "disk.img")); err == nil {
			for _, line := range strings.Split(out, "\n") {
				if dev, _, ok := strings.Cut(line, ":"); ok {
					run("losetup", "--detach", dev)
				}
			}
		}
		if !mounted(mnt) {
			os.RemoveAll(base)
		}
	}
}

// mounted reports whether a file system is mounted at dir.
func mounted(dir string) bool {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if f := strings.Fields(s.Text()); len(f) > 1 && f[1] == dir {
			return true
		}
	}
	return false
}

// run runs a command and returns its standard output; its error says what it wrote to
// standard error.
func run(name string, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("slowdisk: %s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), nil
}

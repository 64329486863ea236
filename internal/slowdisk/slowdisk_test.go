package slowdisk_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/corral/corral/internal/slowdisk"
)

// TestThrottle measures O_DSYNC writes on a disk with and without a limit of 20 writes per second,
// and checks that Close leaves no mount, loop device or control group behind.
func TestThrottle(t *testing.T) {
	if err := slowdisk.Available(); err != nil {
		t.Skip(err)
	}
	d, err := slowdisk.New(64 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fast, err := d.Measure(20)
	if err != nil {
		t.Fatal(err)
	}
	const iops = 20
	if err := d.Throttle(iops); err != nil {
		t.Fatal(err)
	}
	slow, err := d.Measure(10)
	if err != nil {
		t.Fatal(err)
	}
	writes, err := d.Writes()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("O_DSYNC write of 4 KB on %s: %v unlimited; %v at %d writes/s; %d writes counted",
		d.Device(), fast, slow, iops, writes)
	if slow < time.Second/iops/2 {
		t.Errorf("an O_DSYNC write takes %v at %d writes/s: the limit does not bite", slow, iops)
	}
	if err := d.Throttle(0); err != nil {
		t.Fatal(err)
	}
	dir, loop := d.Dir, strings.Fields(d.Device())[0]
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there after Close (%v)", dir, err)
	}
	if out, _ := exec.Command("losetup", "--list", "--noheadings", "--output", "NAME").Output(); strings.Contains(string(out), loop+"\n") {
		t.Errorf("%s still attached after Close", loop)
	}
}

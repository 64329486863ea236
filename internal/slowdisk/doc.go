// Package slowdisk gives a fault test a disk whose writes it can make slow for chosen
// processes: an ext4 file system on a loop device backed by a sparse file in the temporary
// directory, mounted at a new directory (Disk.Dir), and a blkio control group (cgroup v1) of its
// own. Processes placed in the group (Disk.Add) have their writes to that loop device limited
// to a number of I/O operations per second while Throttle is in force; other processes, and
// other devices, are not affected.
//
// The limit bites on the writes a process submits itself: those of O_DSYNC writes and of
// fsync/fdatasync, which write back the pages the call waits for in the caller's context. It
// does not bite on the kernel's own background writeback (cgroup v1 does not attribute it), so
// a process that writes and then syncs, as a Raft log does, waits about one limit interval per
// write operation of its sync. Measure shows it on the running kernel.
//
// The package owns what New creates: the backing file and mount point (under a directory
// named corral-slowdisk-<pid>-… in the temporary directory), the loop device, the mount and the
// control group (corral-slowdisk-<pid>-… under the blkio hierarchy). Close removes them all;
// Sweep removes those left behind by test processes that no longer run.
//
// It needs root, losetup, mkfs.ext4, mount and the blkio controller of cgroup v1 with its
// throttle files; Available says whether they are there.
package slowdisk

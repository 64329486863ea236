package procutil

import "syscall"

// sysProcAttr gives each child its own process group (a terminal's Ctrl-C
// reaches the test binary, which then cleans up in order) and SIGKILL when
// the test binary dies without cleaning up.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

package bench

import "syscall"

// sysProcAttr puts each server in its own process group (Ctrl-C reaches only the benchmark,
// which then stops the servers in order) and has it killed if the benchmark dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

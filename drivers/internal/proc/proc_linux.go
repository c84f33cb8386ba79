package proc

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the program in a process group of its own, killed with
// it, and has the kernel kill the program when chorusd dies, even by
// SIGKILL (Pdeathsig: what the program started itself is ended by
// systemd's control group, the shipped unit's KillMode).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }

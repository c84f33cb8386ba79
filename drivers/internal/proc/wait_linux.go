package proc

import (
	"os/exec"
	"syscall"
	"unsafe"
)

const pPID = 1 // P_PID, waitid(2)

// AwaitExit blocks until cmd's process has exited, without reaping it,
// and reports true (false where it cannot tell). Until Wait reaps it, its
// pid — and so its process group's id — cannot be another process's, so
// Kill may still be called to end what is left of its group.
func AwaitExit(cmd *exec.Cmd) bool {
	if cmd == nil || cmd.Process == nil {
		return false
	}
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return true
		case syscall.EINTR:
			continue
		default:
			return false
		}
	}
}

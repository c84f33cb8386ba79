package proc

import (
	"os"
	"syscall"
)

const fSetPipeSz = 1031 // F_SETPIPE_SZ, fcntl(2)

// GrowPipe asks the kernel for a pipe buffer of size bytes (at most
// /proc/sys/fs/pipe-max-size, 1 MiB by default, for a user without
// CAP_SYS_RESOURCE) and returns the size it has.
func GrowPipe(f *os.File, size int) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	got := 0
	rc.Control(func(fd uintptr) {
		for ; size >= 64<<10; size /= 2 {
			r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, uintptr(size))
			if errno == 0 {
				got = int(r)
				return
			}
		}
	})
	return got
}

package proc

import (
	"os"
	"syscall"
	"unsafe"
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

// Unread is how many bytes a pipe holds that its reader has not taken
// (FIONREAD, on either end); ok is false where it cannot be told.
func Unread(f *os.File) (n int, ok bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	rc.Control(func(fd uintptr) {
		var v int32
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&v)))
		n, ok = int(v), errno == 0
	})
	return n, ok
}

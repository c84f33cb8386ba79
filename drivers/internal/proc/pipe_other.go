//go:build !linux

package proc

import "os"

// GrowPipe does nothing where pipes cannot be grown; it returns 0.
func GrowPipe(*os.File, int) int { return 0 }

// Unread cannot tell here: ok is false.
func Unread(*os.File) (int, bool) { return 0, false }

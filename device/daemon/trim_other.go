//go:build !linux

package daemon

// trimStartupPages is Linux-only (MADV_PAGEOUT).
func trimStartupPages() {}

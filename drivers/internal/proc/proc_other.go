//go:build !unix

package proc

import "os/exec"

// Without process groups only the program itself is killed.
func ownGroup(*exec.Cmd) {}

func killGroup(int) {}

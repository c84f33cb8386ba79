package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/install"
)

func init() {
	commands["install"] = command{"lay chorusd, its config and units into a root filesystem (an SD card)", runInstall}
}

func runInstall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("install", stderr)
	root := fs.String("root", "", "root filesystem to install into, e.g. /media/$USER/rootfs (required)")
	cfg := fs.String("config", "", "the device config, e.g. firmware-configs/livingroom/pi5-robot.yaml (required)")
	bin := fs.String("binary", "", "the chorusd built for the board (default: chorusd beside this program, else on PATH)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" || *cfg == "" {
		return errors.New("-root and -config are required")
	}
	if *bin == "" {
		p, err := findChorusd()
		if err != nil {
			return fmt.Errorf("%w: build it (make dist) and pass -binary", err)
		}
		*bin = p
	}
	rep, err := install.Run(install.Options{Root: *root, Config: *cfg, Binary: *bin})
	for _, s := range rep.Steps {
		what := "unchanged"
		if s.Changed {
			what = "written"
		}
		fmt.Fprintf(stdout, "  %-60s %s\n", s.Path, what)
	}
	if err != nil {
		return err
	}
	if len(rep.Secrets) > 0 {
		fmt.Fprintln(stdout, "generated secrets (shown this once; they are in the files above, mode 0600):")
		for _, s := range rep.Secrets {
			fmt.Fprintf(stdout, "  %-50s %s\n", s.Where, s.Value)
		}
	}
	if len(rep.Variables) > 0 {
		fmt.Fprintf(stdout, "the config needs in /etc/default/chorusd:\n")
		for _, v := range rep.Variables {
			state := "MISSING: set it"
			if v.Set {
				state = "set"
			}
			fmt.Fprintf(stdout, "  %-28s (%s) %s\n", v.Name, v.Field, state)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	fmt.Fprintln(stdout, rep.Next(*root))
	return nil
}

// findChorusd finds the chorusd binary beside this program, else on PATH.
func findChorusd() (string, error) {
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), "chorusd"); fileExists(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("chorusd"); err == nil {
		return p, nil
	}
	return "", errors.New("no chorusd beside this program or on PATH")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

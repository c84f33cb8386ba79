//go:build !bench

package cli

import (
	"context"
	"errors"
	"io"
)

// Without the tag bench, chorus has no benchmarks: they link the fake
// servers they measure against (bench.go).
func init() {
	commands["bench"] = command{"measure (benchmarks are built with -tags bench; see BENCHMARKS.md)", runBench}
	commands["fakemodel"] = command{"a fake model server at a model's pace (built with -tags bench)", runFakeModel}
}

func runFakeModel(context.Context, []string, io.Writer, io.Writer) error {
	return errors.New("this chorus is built without the fake model server (a test server); " +
		"from the source tree: go run -tags bench ./cmd/chorus fakemodel …")
}

func runBench(context.Context, []string, io.Writer, io.Writer) error {
	return errors.New("chorus bench: this chorus is built without its benchmarks (they link test servers); " +
		"from the source tree: go run -tags bench ./cmd/chorus bench …")
}

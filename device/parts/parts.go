// Package parts is the one registry of what this build of chorusd
// contains: every kind of camera source, audio output, TTS engine and
// brain, each with the check of its config fields and its constructor.
// `chorusd --check-config` and a start check a config through the same
// registry, so a check fails exactly where a start would; `chorusd --list`
// prints it.
//
// A kind that needs a C library is registered in every build: built in
// with its tag (gocv, portaudio), and otherwise as absent with the reason,
// so a config naming it is told how to build chorusd for it.
//
// # Adding a part
//
// An engine or a brain is one new package and one Add in builtin.go (or a
// tag-guarded file): its Kind, one line About it, Check for its fields,
// Make to build it.
package parts

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/mic"
	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/tts"
	"github.com/chorus-robotics/chorus/drivers/wake"
	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Env is what parts are made with beside the config.
type Env struct {
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// Look takes a picture with the device's camera, for a brain's vision
	// tool; nil when the device has none.
	Look llm.Looker
}

// Mode says how much a check may assume.
type Mode int

const (
	// Anywhere checks the fields alone: any build, any machine (the
	// installer, on the operator's computer).
	Anywhere Mode = iota
	// Here also checks that this build contains the kinds named and that
	// what they need on this machine is there (binaries, secrets).
	Here
)

// Part is one kind of a group.
type Part[T any] struct {
	Kind  string
	About string
	// Absent, when set, says why this build lacks the kind and how to
	// build it in ("build chorusd with -tags gocv").
	Absent string
	// Tag is the build tag that builds the kind in ("gocv"); empty for a
	// kind every build contains. The installer checks it against the
	// target binary's build tags (InBuild).
	Tag string
	// Check reports the kind's own field problems ("field: what is wrong").
	Check func(c *robot.Config, m Mode) []string
	// Make builds it; it must not touch hardware beyond opening it.
	Make func(c *robot.Config, env Env) (T, error)
}

// Group is the parts of one kind of thing, chosen by one config field.
type Group[T any] struct {
	What  string // "camera source", for messages
	Field string // the config field naming the kind
	Kind  func(c *robot.Config) string
	// Hints are names people give a kind that is not one, each with what
	// to write instead ("ollama": an OpenAI-compatible server).
	Hints map[string]string
	parts map[string]Part[T]
}

func newGroup[T any](what, field string, kind func(*robot.Config) string) *Group[T] {
	return &Group[T]{What: what, Field: field, Kind: kind, parts: map[string]Part[T]{}}
}

// Add registers p; a kind registered twice is a programming error.
func (g *Group[T]) Add(p Part[T]) {
	if _, dup := g.parts[p.Kind]; dup {
		panic("parts: " + g.What + " " + p.Kind + " registered twice")
	}
	g.parts[p.Kind] = p
}

// Kinds lists the kinds of the group, sorted.
func (g *Group[T]) Kinds() []string {
	out := make([]string, 0, len(g.parts))
	for k := range g.parts {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Built reports whether kind is registered and built into this chorusd.
func (g *Group[T]) Built(kind string) bool {
	p, ok := g.parts[kind]
	return ok && p.Absent == ""
}

// check reports the problems of the kind c names.
func (g *Group[T]) check(c *robot.Config, m Mode) []string {
	kind := g.Kind(c)
	p, ok := g.parts[kind]
	if !ok {
		return []string{fmt.Sprintf("%s: must be one of %s, got %q%s", g.Field, strings.Join(g.Kinds(), ", "), kind, g.hint(kind))}
	}
	var out []string
	if p.Absent != "" && m == Here {
		out = append(out, fmt.Sprintf("%s: %q is not built into this chorusd: %s", g.Field, kind, p.Absent))
	}
	if p.Check != nil {
		out = append(out, p.Check(c, m)...)
	}
	return out
}

// hint says what an unknown kind was likely meant to be: a hint for the
// name (or a name close to it), else the closest kind.
func (g *Group[T]) hint(kind string) string {
	names := slices.Sorted(maps.Keys(g.Hints))
	if h, ok := g.Hints[strings.ToLower(kind)]; ok {
		return ": " + h
	}
	if n := settings.Closest(kind, names...); n != "" {
		return settings.DidYouMean(kind, n) + " " + g.Hints[n]
	}
	return settings.DidYouMean(kind, g.Kinds()...)
}

// Make builds the part c names.
func (g *Group[T]) Make(c *robot.Config, env Env) (T, error) {
	kind := g.Kind(c)
	p, ok := g.parts[kind]
	var zero T
	switch {
	case !ok:
		return zero, fmt.Errorf("%s: unknown %s %q", g.Field, g.What, kind)
	case p.Absent != "":
		return zero, fmt.Errorf("%s: %q is not built into this chorusd: %s", g.Field, kind, p.Absent)
	case p.Make == nil:
		return zero, nil
	}
	v, err := p.Make(c, env)
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", g.Field, kind, err)
	}
	return v, nil
}

// The groups.
var (
	Cameras = newGroup[camera.Source]("camera source", "drivers.camera.kind", func(c *robot.Config) string { return c.Drivers.Camera.Kind })
	Audio   = newGroup[audio.Output]("audio output", "drivers.audio.kind", func(c *robot.Config) string { return c.Drivers.Audio.Kind })
	TTS     = newGroup[tts.Engine]("TTS engine", "drivers.tts.kind", func(c *robot.Config) string { return c.Drivers.TTS.Kind })
	Brains  = newGroup[brain.Brain]("brain", "brain.provider", func(c *robot.Config) string { return c.Brain.Provider })
	Mics    = newGroup[mic.Source]("microphone", "drivers.mic.kind", func(c *robot.Config) string { return c.Drivers.Mic.Kind })
	STT     = newGroup[stt.Engine]("speech-to-text engine", "hearing.stt.kind", func(c *robot.Config) string { return c.Hearing.Ear.STT.Kind })
	Wakes   = newGroup[wake.Detector]("wake-word detector", "hearing.wake.kind", func(c *robot.Config) string { return c.Hearing.Ear.Wake.Kind })
)

// hears reports whether c's robot hears: its speech-to-text engine is
// checked and built only then.
func hears(c *robot.Config) bool { return c.Hearing.Enabled }

// Check reports every problem of c's parts, each by its field: the kinds
// it names and their own fields, and the body (its parts and its
// actions, whose kinds' defaults it fills in c first).
func Check(c *robot.Config, m Mode) []string {
	var out []string
	out = append(out, Cameras.check(c, m)...)
	out = append(out, Audio.check(c, m)...)
	out = append(out, TTS.check(c, m)...)
	out = append(out, Mics.check(c, m)...)
	if c.Companion != nil {
		out = append(out, Brains.check(c, m)...)
	}
	if hears(c) {
		out = append(out, STT.check(c, m)...)
		out = append(out, Wakes.check(c, m)...)
	}
	return append(out, checkBody(c)...)
}

// InBuild reports, a line per field, the kinds c names that a chorusd
// built with tags lacks, naming the build that has them. It assumes that
// chorusd is built from the same source as this program (the installer
// says when the versions differ).
func InBuild(c *robot.Config, tags []string) []string {
	has := map[string]bool{}
	for _, t := range tags {
		has[t] = true
	}
	built := "without build tags"
	if len(tags) > 0 {
		built = "with -tags " + strings.Join(tags, ",")
	}
	var out []string
	add := func(field, what, kind string, p Part[struct{}], ok bool) {
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: no %s %q in any build of chorusd", field, what, kind))
		case p.Tag != "" && !has[p.Tag]:
			out = append(out, fmt.Sprintf("%s: %s %q is not in this chorusd (built %s): build it with -tags %s", field, what, kind, built, p.Tag))
		}
	}
	add(inBuild(Cameras, c))
	add(inBuild(Audio, c))
	add(inBuild(TTS, c))
	add(inBuild(Mics, c))
	if c.Companion != nil {
		add(inBuild(Brains, c))
	}
	if hears(c) {
		add(inBuild(STT, c))
		add(inBuild(Wakes, c))
	}
	return out
}

func inBuild[T any](g *Group[T], c *robot.Config) (string, string, string, Part[struct{}], bool) {
	kind := g.Kind(c)
	p, ok := g.parts[kind]
	return g.Field, g.What, kind, Part[struct{}]{Kind: p.Kind, Tag: p.Tag}, ok
}

// List says what this build contains, a line per group.
func List() string {
	var b strings.Builder
	line := func(title string, kinds []string, about func(string) (string, string)) {
		fmt.Fprintf(&b, "%s:\n", title)
		for _, k := range kinds {
			a, absent := about(k)
			if absent != "" {
				a = "not built in: " + absent
			}
			fmt.Fprintf(&b, "  %-12s %s\n", k, a)
		}
	}
	line("camera sources (drivers.camera.kind)", Cameras.Kinds(), Cameras.about)
	line("audio outputs (drivers.audio.kind)", Audio.Kinds(), Audio.about)
	line("TTS engines (drivers.tts.kind)", TTS.Kinds(), TTS.about)
	line("brains (brain.provider)", Brains.Kinds(), Brains.about)
	line("microphones (drivers.mic.kind)", Mics.Kinds(), Mics.about)
	line("speech-to-text engines (hearing.stt.kind)", STT.Kinds(), STT.about)
	line("wake-word detectors (hearing.wake.kind)", Wakes.Kinds(), Wakes.about)
	line("action drivers (body.actions[].driver)", ActionKinds.Kinds(), func(k string) (string, string) { return ActionKinds.kinds[k].About, "" })
	return b.String()
}

func (g *Group[T]) about(kind string) (string, string) {
	p := g.parts[kind]
	return p.About, p.Absent
}

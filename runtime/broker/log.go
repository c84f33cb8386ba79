package broker

import (
	"context"
	"log/slog"
)

// libraryLog is the handler the broker's library logs through: its
// housekeeping (hooks added, listeners attached, started, stopped) is at
// debug, not beside the robot's own lines at info, and its warning with no
// message — a client's connection that ended with an error — is a debug
// line that says so. Its other warnings and errors stay as they are.
type libraryLog struct{ h slog.Handler }

func (l libraryLog) Enabled(ctx context.Context, level slog.Level) bool {
	if level < slog.LevelWarn {
		level = slog.LevelDebug
	}
	return l.h.Enabled(ctx, level)
}

func (l libraryLog) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case r.Level < slog.LevelWarn:
		r.Level = slog.LevelDebug
	case r.Message == "" && r.Level == slog.LevelWarn:
		r.Level, r.Message = slog.LevelDebug, "broker: a client's connection ended"
	}
	if !l.h.Enabled(ctx, r.Level) {
		return nil
	}
	return l.h.Handle(ctx, r)
}

func (l libraryLog) WithAttrs(as []slog.Attr) slog.Handler { return libraryLog{l.h.WithAttrs(as)} }
func (l libraryLog) WithGroup(name string) slog.Handler    { return libraryLog{l.h.WithGroup(name)} }

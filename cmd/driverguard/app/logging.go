package app

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/driverguard/driverguard/output"
)

// Every library's logs — client-go and cert-controller through klog, controller-runtime, and
// the standard log package Helm writes its warnings to — go through one handler, installed
// when the package is initialized, before anything runs: setting a process-wide logger later
// (inside a command) races with the loggers libraries already hold. A command then only
// chooses where that handler writes: one-shot commands print warnings and errors as
// "Warning: ..." lines on stderr and drop the rest (no raw library lines), `serve` writes
// structured logs.
var processLog = &switchHandler{}

func init() {
	processLog.set(newWarningHandler(os.Stderr))
	l := logr.FromSlogHandler(processLog)
	klog.SetLogger(l)
	ctrllog.SetLogger(l)
	log.SetFlags(0)
	log.SetOutput(stdlogWriter{})
}

// setLogDestination makes h the destination of every library's logs.
func setLogDestination(h slog.Handler) { processLog.set(h) }

// processLogger is the logger of the process-wide handler, for a command's own logs.
func processLogger() logr.Logger { return logr.FromSlogHandler(processLog) }

// switchHandler is a slog.Handler whose destination (processLog's) can change while loggers
// derived from it are in use. A derived handler keeps the destination's own derivation (its
// groups and attributes applied) and redoes it only when the destination changes.
type switchHandler struct {
	dest  atomic.Pointer[slog.Handler]
	attrs []slog.Attr
	group string
	// derived is the destination with group and attrs applied, for the destination it was
	// derived from.
	derived atomic.Pointer[derivedHandler]
}

type derivedHandler struct {
	from *slog.Handler
	h    slog.Handler
}

func (s *switchHandler) set(h slog.Handler) { s.dest.Store(&h) }

func (s *switchHandler) target() slog.Handler {
	dest := processLog.dest.Load()
	if dest == nil {
		return discard{}
	}
	if d := s.derived.Load(); d != nil && d.from == dest {
		return d.h
	}
	out := *dest
	if s.group != "" {
		out = out.WithGroup(s.group)
	}
	if len(s.attrs) > 0 {
		out = out.WithAttrs(s.attrs)
	}
	s.derived.Store(&derivedHandler{from: dest, h: out})
	return out
}

func (s *switchHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return s.target().Enabled(ctx, l)
}

func (s *switchHandler) Handle(ctx context.Context, r slog.Record) error {
	return s.target().Handle(ctx, r)
}

func (s *switchHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &switchHandler{attrs: append(append([]slog.Attr(nil), s.attrs...), attrs...), group: s.group}
}

func (s *switchHandler) WithGroup(name string) slog.Handler {
	g := name
	if s.group != "" {
		g = s.group + "." + name
	}
	return &switchHandler{attrs: s.attrs, group: g}
}

type discard struct{}

func (discard) Enabled(context.Context, slog.Level) bool  { return false }
func (discard) Handle(context.Context, slog.Record) error { return nil }
func (d discard) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discard) WithGroup(string) slog.Handler           { return d }

// stdlogWriter turns standard log lines (Helm's warnings) into warning records.
type stdlogWriter struct{}

func (stdlogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	msg = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(msg, "warning:"), "Warning:"))
	h := processLog.target()
	if h.Enabled(context.Background(), slog.LevelWarn) {
		_ = h.Handle(context.Background(), slog.NewRecord(time.Now(), slog.LevelWarn, msg, 0))
	}
	return len(p), nil
}

// maxLogLine bounds a library message printed as a warning.
const maxLogLine = 2000

// warningHandler prints warnings and errors as "Warning: <message>" lines, the way the
// commands print their own warnings, and drops everything else. A message is a library's and
// may quote what it read (an API server's warning, a node's name, a file's): it is escaped
// (output.Escape), one line each, as the commands' own warnings are.
type warningHandler struct {
	w  io.Writer
	mu *sync.Mutex
}

func newWarningHandler(w io.Writer) slog.Handler { return &warningHandler{w: w, mu: &sync.Mutex{}} }

func (h *warningHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *warningHandler) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" || a.Key == "error" {
			msg += ": " + a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(msg) > maxLogLine {
		msg = fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(msg[:maxLogLine], ""), len(msg))
	}
	_, err := fmt.Fprintln(h.w, "Warning:", output.Escape(msg))
	return err
}

func (h *warningHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *warningHandler) WithGroup(string) slog.Handler      { return h }

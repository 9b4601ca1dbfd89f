package operator

import (
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/karp-autoscaler/karp/pkg/options"
)

// NewLogger builds the JSON logger upstream Karpenter users expect: keys
// message, level, time, logger, caller; ISO8601 times; upper-case levels;
// caller only at debug; no stack traces. V(1) is debug.
func NewLogger(opts *options.Options) (logr.Logger, error) {
	level := zapcore.InfoLevel
	switch opts.LogLevel {
	case options.LogLevelDebug:
		level = zapcore.DebugLevel
	case options.LogLevelError:
		level = zapcore.ErrorLevel
	}
	cfg := zap.Config{
		Level:             zap.NewAtomicLevelAt(level),
		Development:       false,
		DisableCaller:     level != zapcore.DebugLevel,
		DisableStacktrace: true,
		Sampling:          &zap.SamplingConfig{Initial: 100, Thereafter: 100},
		Encoding:          "json",
		EncoderConfig: zapcore.EncoderConfig{
			MessageKey:     "message",
			LevelKey:       "level",
			TimeKey:        "time",
			NameKey:        "logger",
			CallerKey:      "caller",
			EncodeLevel:    zapcore.CapitalLevelEncoder,
			EncodeTime:     zapcore.ISO8601TimeEncoder,
			EncodeDuration: zapcore.StringDurationEncoder,
			EncodeCaller:   zapcore.ShortCallerEncoder,
		},
		OutputPaths:      split(opts.LogOutputPaths),
		ErrorOutputPaths: split(opts.LogErrorOutputPaths),
	}
	z, err := cfg.Build()
	if err != nil {
		return logr.Logger{}, fmt.Errorf("building logger: %w", err)
	}
	return logr.New(newLazySink(zapr.NewLogger(z).GetSink())).WithName("controller"), nil
}

func split(paths string) []string {
	var out []string
	for _, p := range strings.Split(paths, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

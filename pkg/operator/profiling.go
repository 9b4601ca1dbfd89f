package operator

import (
	"net/http"
	"net/http/pprof"
)

// profilingHandlers serves pprof on the metrics server when enabled.
func profilingHandlers(enabled bool) map[string]http.Handler {
	if !enabled {
		return nil
	}
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

package api

import (
	"context"
	"net/http"
	"net/http/pprof"
	"time"
)

// NewAdminHandler serves the operators' endpoints, kept off the public
// listener: /healthz (the process is up), /readyz (it should get traffic:
// not draining and the database answers within 2 s), /metrics, and the Go
// runtime profiles under /debug/pprof/ (heap, goroutine, CPU profile,
// trace), which show how memory and time are spent in a running replica.
func NewAdminHandler(ready func(context.Context) error, metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := ready(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /metrics", metrics)
	// pprof.Index also serves the named profiles (/debug/pprof/heap, ...).
	// Registered here explicitly: the package's init registers the same
	// handlers on http.DefaultServeMux, which no listener of ours serves.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kukie/gitops-server/internal/render"
)

// renderSandbox finds, once at start, which layers keep render children
// (`binary render`) off the network under KUKIE_RENDER_SANDBOX, and logs them
// in one line; its children run under limits. A host where the child cannot
// install its seccomp filter (any mode), or a namespace mode without a
// namespace, is a start-up error naming the variable.
func renderSandbox(ctx context.Context, mode render.SandboxMode, binary string, limits render.Limits, log *slog.Logger) (render.Sandbox, error) {
	// The probe's children run under the renders' own limits, so what it
	// finds is what a render gets.
	probeLimits := limits
	probeLimits.Timeout = time.Minute
	rep, err := render.ProbeSandbox(ctx, mode, binary, []string{"render"}, probeLimits)
	if err != nil {
		return render.Sandbox{}, fmt.Errorf("KUKIE_RENDER_SANDBOX=%s: %w", mode, err)
	}
	attrs := []any{"mode", string(rep.Mode), "layers", rep.Sandbox.Layers()}
	if len(rep.Missing) > 0 {
		attrs = append(attrs, "missing", rep.Missing)
	}
	log.InfoContext(ctx, "render sandbox", attrs...)
	return rep.Sandbox, nil
}

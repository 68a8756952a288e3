package main

import (
	"fmt"

	"github.com/kukie/gitops-server/internal/render"
)

// renderChildLimits are the limits of each render child: KUKIE_RENDER_TIMEOUT,
// the output cap, and its share of the container's memory beside the
// server's own GOMEMLIMIT (render.ChildMemoryLimit). containerLimit reads
// the container's memory limit (memlimit.FromCgroup in production: the same
// reading that set GOMEMLIMIT); an error there means no known limit.
func renderChildLimits(cfg config, containerLimit func() (uint64, error), goMemLimit int64) (render.Limits, error) {
	limit, err := containerLimit()
	if err != nil {
		limit = 0
	}
	mem, err := render.ChildMemoryLimit(limit, goMemLimit, cfg.RenderConcurrency)
	if err != nil {
		return render.Limits{}, fmt.Errorf("invalid configuration: %w", err)
	}
	return render.Limits{Timeout: cfg.RenderTimeout, MaxOutputBytes: renderMaxOutput, MaxMemoryBytes: mem}, nil
}

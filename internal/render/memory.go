package render

import (
	"fmt"
	"math"
)

// Memory limits of render children (Limits.MaxMemoryBytes).
const (
	// DefaultChildMemoryBytes is a child's limit when the container's is not
	// known, and the most a child ever gets.
	DefaultChildMemoryBytes = 3 << 30
	// MinChildMemoryBytes is the least a child is started with. An idle
	// child of the release binary already holds about 86 MB of private
	// writable memory (package initialisation of Helm, kustomize and
	// client-go) and renders a small chart within 96 MiB; 256 MiB leaves room
	// for real charts and kustomizations.
	MinChildMemoryBytes = 256 << 20
)

// ChildMemoryLimit is each render child's memory limit: what the container
// leaves beside the server's own Go memory limit, shared by the renders that
// may run at once, (containerLimit − goMemLimit) / concurrency, at most
// DefaultChildMemoryBytes. containerLimit 0 means unknown (no cgroup limit):
// then every child gets DefaultChildMemoryBytes. goMemLimit is the parent's
// GOMEMLIMIT (math.MaxInt64 when none). A share below MinChildMemoryBytes is
// an error naming the settings to change, for start-up to print.
func ChildMemoryLimit(containerLimit uint64, goMemLimit int64, concurrency int) (int64, error) {
	if concurrency < 1 {
		return 0, fmt.Errorf("KUKIE_RENDER_CONCURRENCY must be at least 1, not %d", concurrency)
	}
	if containerLimit == 0 || containerLimit >= unlimitedCgroup {
		return DefaultChildMemoryBytes, nil
	}
	left := int64(0)
	if goMemLimit >= 0 && uint64(goMemLimit) < containerLimit {
		left = int64(containerLimit - uint64(goMemLimit))
	}
	share := left / int64(concurrency)
	if share < MinChildMemoryBytes {
		return 0, fmt.Errorf("KUKIE_RENDER_CONCURRENCY=%d with GOMEMLIMIT=%s leaves each render child %s of the container's "+
			"memory limit of %s, below the minimum of %s: lower GOMEMLIMIT (or KUKIE_MEMORY_LIMIT) or KUKIE_RENDER_CONCURRENCY, "+
			"or raise the container's memory limit", concurrency, mib(goMemLimit), mib(share), mib(int64(containerLimit)),
			mib(MinChildMemoryBytes))
	}
	return min(share, DefaultChildMemoryBytes), nil
}

// unlimitedCgroup: cgroup v1 reports "no limit" as a page-rounded
// MaxInt64; anything from 4 EiB up is no limit.
const unlimitedCgroup = 1 << 62

func mib(n int64) string {
	if n == math.MaxInt64 {
		return "unset"
	}
	return fmt.Sprintf("%dMiB", n>>20)
}

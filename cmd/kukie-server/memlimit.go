package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kukie/gitops-server/internal/render"
)

// Where the server's Go memory limit came from (logged at start-up).
const (
	limitFromGOMEMLIMIT = "GOMEMLIMIT"
	limitFromKukie      = "KUKIE_MEMORY_LIMIT"
	limitFromContainer  = "container"
	limitNone           = "none"
)

// minServerMemory is the least Go memory limit start-up accepts: an idle
// replica's heap is ~30 MiB and its process ~85 MiB.
const minServerMemory = 128 << 20

// goMemoryLimit decides the replica's Go memory limit: GOMEMLIMIT wins
// (the runtime has applied it: goMemLimit is its value), then
// KUKIE_MEMORY_LIMIT (kukie, 0 when unset), then 90 % of the container's
// limit (0: unknown) less the render children's budget — they share the
// pod's memory, each started with at least render.MinChildMemoryBytes.
// With none of them there is no limit (math.MaxInt64).
func goMemoryLimit(gomemlimitSet bool, goMemLimit, kukie int64, container uint64, concurrency int) (int64, string, error) {
	switch {
	case gomemlimitSet:
		return goMemLimit, limitFromGOMEMLIMIT, nil
	case kukie > 0:
		return kukie, limitFromKukie, nil
	case container == 0 || container >= 1<<62:
		return math.MaxInt64, limitNone, nil
	}
	children := int64(concurrency) * render.MinChildMemoryBytes
	limit := int64(container)/10*9 - children
	if limit < minServerMemory {
		return 0, "", fmt.Errorf("the container's memory limit of %dMiB leaves the server %dMiB after 10%% headroom and "+
			"KUKIE_RENDER_CONCURRENCY=%d render children of %dMiB: raise the limit, lower KUKIE_RENDER_CONCURRENCY, "+
			"or set KUKIE_MEMORY_LIMIT", container>>20, limit>>20, concurrency, render.MinChildMemoryBytes>>20)
	}
	return limit, limitFromContainer, nil
}

// memorySize parses a memory size as GOMEMLIMIT writes one: a whole number
// of bytes, or with a B, KiB, MiB, GiB or TiB suffix.
func memorySize(dst *int64, s string) error {
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	num, shift := s, uint(0)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, shift = strings.TrimSuffix(s, u.suffix), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift || n<<shift < minServerMemory {
		return fmt.Errorf("must be a memory size such as 512MiB or 1GiB (bytes, or B, KiB, MiB, GiB, TiB), at least %dMiB",
			minServerMemory>>20)
	}
	*dst = n << shift
	return nil
}

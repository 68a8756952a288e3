package jobs

import (
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

var _ river.ClientRetryPolicy = Backoff{}

// Default backoff: 2 s, 4 s, 8 s … doubling up to 3 min. With the default
// 12 attempts a job keeps trying for about 16 minutes, past the service's
// 10-minute propagation window.
const (
	DefaultBackoffBase = 2 * time.Second
	DefaultBackoffMax  = 3 * time.Minute
)

// Backoff is the retry policy: Base after the first failure, doubling
// after each further one, never more than Max. Zero fields take the
// defaults; tests use milliseconds.
type Backoff struct {
	Base time.Duration
	Max  time.Duration
	// Now is the clock retries are scheduled from (default time.Now).
	Now func() time.Time
}

// Delay is the wait after the given number of failed runs (at least one).
func (b Backoff) Delay(failures int) time.Duration {
	base, ceiling := b.Base, b.Max
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if ceiling <= 0 {
		ceiling = DefaultBackoffMax
	}
	d := base
	for i := 1; i < failures && d < ceiling; i++ {
		if d > ceiling/2 {
			return ceiling
		}
		d *= 2
	}
	return min(d, ceiling)
}

// NextRetry implements river.ClientRetryPolicy. The job's recorded errors
// (this failure not yet among them) count the failures, as River's own
// policy does, so snoozes do not lengthen the wait.
func (b Backoff) NextRetry(job *rivertype.JobRow) time.Time {
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	return now().UTC().Add(b.Delay(len(job.Errors) + 1))
}

package store

// WithDenseHistory sets how many plans of one app make Kukie history walk
// the cluster's plans newest first rather than fetch the app's plans by id.
// Both give the same answer; tests lower it to run the walk on small data.
func WithDenseHistory(n int) Option {
	return func(db *DB) { db.denseHistory = n }
}

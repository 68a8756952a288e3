package gitrepo

// InflatedBytes is what f has inflated from packs so far, across all its
// fetches: what a test asserts a refused pack cost.
func InflatedBytes(f *Fetcher) int64 { return f.inflated.load() }

package helmrepo

// Extract exposes extract to the external tests with generous limits.
func Extract(archive []byte, chart string) (map[string][]byte, error) {
	return extract(archive, chart, limits{maxBytes: 1 << 20, maxFiles: 100})
}

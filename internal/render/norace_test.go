//go:build !race

package render

// childMemoryScale: the child is an ordinary build; it gets the limits
// production gives.
const childMemoryScale = 1

//go:build race

package render

// childMemoryScale: under -race the test binary acting as the child
// carries ThreadSanitizer's shadow memory, several times its heap.
const childMemoryScale = 4

//go:build race

package main

// childMemoryScale: under -race the test binary acting as the render child
// carries ThreadSanitizer's shadow memory, several times its heap.
const childMemoryScale = 4

// maskBombBytes is a stream of small Secrets that renders within the
// smallest child share (times childMemoryScale) but cannot be masked there.
const maskBombBytes = 8 << 20

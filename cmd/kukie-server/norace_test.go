//go:build !race

package main

// childMemoryScale: the render child is an ordinary build.
const childMemoryScale = 1

// maskBombBytes is a stream of small Secrets that renders within the
// smallest child share (times childMemoryScale) but cannot be masked there.
const maskBombBytes = 3 << 20

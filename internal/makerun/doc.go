// Package makerun holds no code: its test runs `make run`
// (scripts/dev-run.sh) from outside, as a newcomer would. It starts the
// whole local world on free ports, runs every line of docs/try-it.json
// against it (the stack update's level switch included), checks the
// README's "Try it" section lists the same lines, and that a closed
// terminal (SIGHUP) leaves nothing running.
package makerun

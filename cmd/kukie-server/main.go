// Command kukie-server is the Kukie GitOps server: `serve` (default) runs
// the public API and the admin listener, `migrate up|status` manages the
// schema, `version` prints the build.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, restore default handling: a second
		// Ctrl-C or SIGTERM ends the process at once instead of waiting
		// for the drain.
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kukie-server:", err)
		stop()
		os.Exit(1)
	}
}

// Command kukie-devtoken mints an HS256 development token for a server
// running with KUKIE_AUTH_HS256_SECRET (as `make run` does). It is a local
// development aid: production deployments verify tokens from an identity
// provider's JWKS and never share the signing secret.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/authtest"
)

func main() {
	if err := run(os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kukie-devtoken:", err)
		os.Exit(1)
	}
}

func run(args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kukie-devtoken", flag.ContinueOnError)
	sub := fs.String("sub", "dev-user", "the user (sub claim)")
	team := fs.String("team", "dev-team", "the team (team claim)")
	roles := fs.String("roles", "member", "comma-separated roles: member, admin, agent")
	ttl := fs.Duration("ttl", 12*time.Hour, "lifetime")
	if err := fs.Parse(args); err != nil {
		return err
	}
	secret := getenv("KUKIE_AUTH_HS256_SECRET")
	if secret == "" {
		return fmt.Errorf("KUKIE_AUTH_HS256_SECRET is not set")
	}
	tok, err := authtest.HS256([]byte(secret), authtest.Claims{
		Sub: *sub, Team: *team, Roles: strings.Split(*roles, ","),
		Issuer: getenv("KUKIE_AUTH_ISSUER"), Audience: getenv("KUKIE_AUTH_AUDIENCE"),
		Exp: time.Now().Add(*ttl),
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

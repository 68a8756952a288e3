package netguard

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/net/proxy"
)

// sshProxyScheme is the x/net/proxy scheme under which go-git's ssh transport
// finds the guard (see SSHProxyURL).
const sshProxyScheme = "kukie-netguard"

// The registration is the only way into go-git v5's ssh transport, which
// dials through proxy.FromURL when an endpoint names a proxy and through
// proxy.FromEnvironment otherwise. It adds a scheme of our own and changes
// nothing anyone else dials with; done at init so it happens before any
// lookup (x/net/proxy's registry has no lock).
func init() {
	proxy.RegisterDialerType(sshProxyScheme, dialerFromSSHProxyURL)
}

// SSHProxyURL is the value for go-git's transport.ProxyOptions.URL on ssh
// endpoints: with it, go-git's ssh transport dials through a guard with this
// guard's entries for every team instead of dialing directly (go-git's dial
// carries no team, so team entries do not apply; a client that knows the
// team dials with DialContext). Set it on ssh endpoints only; for https use
// HTTPClient.
func (g *Guard) SSHProxyURL() string {
	u := url.URL{Scheme: sshProxyScheme, Host: "guard"}
	if len(g.allowList) > 0 {
		u.RawQuery = url.Values{"allow": {strings.Join(g.allowList, ",")}}.Encode()
	}
	return u.String()
}

// dialerFromSSHProxyURL rebuilds the guard SSHProxyURL describes. It does
// not forward to the dialer go-git offers (proxy.Direct).
func dialerFromSSHProxyURL(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
	allowed, err := ParseAllowList(u.Query().Get("allow"))
	if err != nil {
		return nil, err
	}
	var everyone []AllowEntry
	for _, e := range allowed {
		if e.Team == "" {
			everyone = append(everyone, e)
		}
	}
	return newGuard(everyone, nil, net.DefaultResolver)
}

// SSHDial connects to an SSH server at addr through DialContext and performs
// the SSH handshake with config (which must pin the host key: x/crypto/ssh
// refuses a nil HostKeyCallback). ctx bounds the dial and the handshake.
func (g *Guard) SSHDial(ctx context.Context, network, addr string, config *ssh.ClientConfig) (*ssh.Client, error) {
	if config == nil {
		return nil, errors.New("netguard: ssh dial without a client config")
	}
	conn, err := g.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if config.Timeout > 0 {
		if d := time.Now().Add(config.Timeout); !hasEarlierDeadline(ctx, d) {
			_ = conn.SetDeadline(d)
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, config)
	if !stop() {
		if err == nil {
			_ = c.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

func hasEarlierDeadline(ctx context.Context, t time.Time) bool {
	d, ok := ctx.Deadline()
	return ok && d.Before(t)
}

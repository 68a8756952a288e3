// Package netguard is the one guarded dialer for every tenant-controlled
// fetch: Git over HTTPS and SSH, and Helm repositories. A tenant chooses the
// repository URL and the Helm repository URLs, so without it a tenant could
// make the server fetch from its own network, loopback services or the cloud
// metadata endpoint (SSRF).
//
// The rule (checked at connect time on every address a connection goes to,
// so DNS rebinding cannot pass a check and then connect elsewhere): loopback,
// link-local, private, 100.64.0.0/10, fc00::/7, unspecified, multicast and
// reserved addresses, and their IPv4-mapped, -compatible, -translated, NAT64
// and 6to4 IPv6 forms, are refused unless the host as written in the URL
// (name or IP literal) is in KUKIE_GIT_ALLOWED_PRIVATE_HOSTS for the team the
// fetch is made for (an entry "team-id=host" allows its host to that team
// only, carried by the context: NewContextWithTeam); cloud metadata
// addresses (169.254.169.254, fd00:ec2::254, 169.254.170.2, 169.254.170.23
// and a few more) are refused even when listed.
//
// Only the Git and Helm clients use it; nothing global is swapped, so the AWS
// credential chain and other outbound clients keep their own transports.
//
// # Wiring
//
// Which URLs are repositories at all is service.ValidRepoURL's rule, applied
// when a repository is connected and by the fetcher; this package decides
// only where a connection may go, when it is made. For https, give go-git a
// transport built on HTTPClient and use it directly rather than installing
// it globally with client.InstallProtocol:
//
//	tr := githttp.NewClientWithOptions(guard.HTTPClient(timeout),
//		&githttp.ClientOptions{RedirectPolicy: githttp.NoFollowRedirects})
//	sess, err := tr.NewUploadPackSession(endpoint, auth)
//
// Do not set ProxyOptions on https endpoints: go-git would replace the
// transport's proxy hook and the target check with it. Proxies come from the
// environment through the guard.
//
// For ssh, internal/gitrepo dials through its DialSSH hook, which the
// server fills with DialContext (the team's entries apply; ALL_PROXY is not
// used for ssh).
//
// Helm repository fetches (index.yaml, chart archives) are plain GETs: make
// them with HTTPClient.
package netguard

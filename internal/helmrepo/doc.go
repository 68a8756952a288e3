// Package helmrepo fetches charts from Helm chart repositories (an HTTP
// index.yaml and .tgz archives) for the repo tab's Helm sources, the way
// Argo CD's repo server resolves a chart and its targetRevision.
//
// Every fetch is anonymous and goes through the HTTP client it is given (the
// guarded one from netguard in production), so a tenant-chosen repository or
// archive URL cannot reach the server's own network. Failures are
// *service.Error with the repo tab's reasons: repo_auth_failed,
// repo_unreachable, ref_not_found, source_type_unsupported, render_failed.
package helmrepo

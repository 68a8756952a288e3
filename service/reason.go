package service

// Reason is a wire code: the code of a problem answer (refining an Error's
// Code), and the reason of a skipped detection entry, an unavailable
// cluster, an app's problem or a source that did not render. Every reason
// written by more than one package, and every problem code, has its one
// home here; adapters and handlers use these constants.
type Reason string

// Problem codes of the HTTP answers, by Error code (api maps each code to
// its status) and for what the router refuses before any use case runs.
const (
	ReasonInvalidRequest       Reason = "invalid_request"
	ReasonValidationFailed     Reason = "validation_failed"
	ReasonUnauthenticated      Reason = "unauthenticated"
	ReasonForbidden            Reason = "forbidden"
	ReasonNotFound             Reason = "not_found"
	ReasonMethodNotAllowed     Reason = "method_not_allowed"
	ReasonConflict             Reason = "conflict"
	ReasonPayloadTooLarge      Reason = "payload_too_large"
	ReasonUnsupportedMediaType Reason = "unsupported_media_type"
	ReasonUnavailable          Reason = "unavailable"
	ReasonInternal             Reason = "internal"
	ReasonRateLimited          Reason = "rate_limited"
)

// Reading a cluster.
const (
	// ReasonClusterUnreachable: the cluster did not answer (network, TLS,
	// timeout, 5xx); EUPSTREAM's default problem code.
	ReasonClusterUnreachable Reason = "cluster_unreachable"
	// ReasonClusterUnauthorized: the cluster refused Kukie's credentials.
	ReasonClusterUnauthorized Reason = "cluster_unauthorized"
	// ReasonArgoCDForbidden: Kukie may not list Applications there.
	ReasonArgoCDForbidden Reason = "argocd_forbidden"
	// ReasonArgoCDNotInstalled is the failure reason of a read of a
	// cluster without Argo CD's Application resource: an answer,
	// remembered NotInstalledTTL.
	ReasonArgoCDNotInstalled Reason = "argocd_not_installed"
	// ReasonBudgetExceeded: detection's time budget ran out first.
	ReasonBudgetExceeded Reason = "budget_exceeded"
	// ReasonKindUnknown: the cluster serves no such kind.
	ReasonKindUnknown Reason = "kind_unknown"
	// ReasonClusterNotFound: no such cluster in the caller's team.
	ReasonClusterNotFound Reason = "cluster_not_found"
	// ReasonAppNotFound: no such Application in the cluster.
	ReasonAppNotFound Reason = "app_not_found"
	// ReasonLimitedAccess: the cluster is LIMITED; Argo CD views need FULL.
	ReasonLimitedAccess Reason = "limited_access"
)

// The repo tab's failures, as problem codes and source errors.
const (
	ReasonRepoNotConnected      Reason = "repo_not_connected"
	ReasonRepoUnreachable       Reason = "repo_unreachable"  // network, TLS, protocol, or no such repository (EUPSTREAM)
	ReasonRepoAuthFailed        Reason = "repo_auth_failed"  // credentials refused (EVALIDATION)
	ReasonRepoAuthInvalid       Reason = "repo_auth_invalid" // a private key that does not parse, SSH without known_hosts (EVALIDATION)
	ReasonHostKeyMismatch       Reason = "host_key_mismatch" // SSH host key not the pinned one, or none pinned (EVALIDATION)
	ReasonRepoURLInvalid        Reason = "repo_url_invalid"  // not https:// or ssh, or credentials in the URL (EVALIDATION)
	ReasonRepoTooLarge          Reason = "repo_too_large"    // a file, the tree or the pack is over a limit (EVALIDATION)
	ReasonRepoFetchBusy         Reason = "repo_fetch_busy"   // other fetches hold the memory fetches share (EUNAVAILABLE)
	ReasonRefNotFound           Reason = "ref_not_found"     // no such ref, or the commit is not in it (ENOTFOUND)
	ReasonPathNotFound          Reason = "path_not_found"
	ReasonRenderFailed          Reason = "render_failed"
	ReasonSourceTypeUnsupported Reason = "source_type_unsupported"
	// ReasonRepoMismatch: the app's source is not the repository connected
	// to the cluster (one is connected).
	ReasonRepoMismatch Reason = "repo_mismatch"
	// ReasonObjectNotRendered: the app's desired manifests hold no object
	// of the resource's kind, namespace and name.
	ReasonObjectNotRendered Reason = "object_not_rendered"
	// ReasonMultiSourceUnsupported: the revert preview does not trace apps
	// with several sources.
	ReasonMultiSourceUnsupported Reason = "multi_source_unsupported"
	// ReasonRenderBusy is a source's error (and a single-source answer's
	// 503 problem) when its render waited longer than the queue timeout
	// for a slot.
	ReasonRenderBusy Reason = "render_busy"
)

// Reasons of a render_failed render that the replica's load and limits
// decided rather than the source: such answers are not cached, the next
// request renders again.
const (
	ReasonRenderTimeout       Reason = "render_timeout"        // killed at KUKIE_RENDER_TIMEOUT
	ReasonRenderMemory        Reason = "render_memory"         // died under its memory limit
	ReasonRenderProcessFailed Reason = "render_process_failed" // died without a result
)

// AWS accounts and EKS registration.
const (
	ReasonAccountNotFound               Reason = "account_not_found"
	ReasonAWSUnavailable                Reason = "aws_unavailable"
	ReasonClusterNotActive              Reason = "cluster_not_active"
	ReasonAuthenticationModeUnsupported Reason = "authentication_mode_unsupported"
)

// Stored repository credentials.
const (
	ReasonSecretKeysNotConfigured Reason = "secret_keys_not_configured"
	ReasonRepoAuthNotFound        Reason = "repo_auth_not_found"
)

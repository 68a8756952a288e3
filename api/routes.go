package api

import (
	"net/http"

	"github.com/kukie/gitops-server/service"
)

// route is one entry of the API surface. The OpenAPI drift test walks this
// table: every route must be documented, with the same roles.
type route struct {
	method, pattern string
	handler         http.Handler
	// public routes need no token (the documentation).
	public bool
	// roles a token needs (any one of them); empty means any authenticated caller.
	roles []service.Role
	// humanOnly refuses tokens carrying the agent role, whatever else they carry.
	humanOnly bool
	// asset routes serve static files under a documented route and are not
	// themselves in the OpenAPI document.
	asset bool
}

var (
	agentOnly = []service.Role{service.RoleAgent}
	people    = []service.Role{service.RoleMember, service.RoleAdmin}
	admins    = []service.Role{service.RoleAdmin}
)

// routes lists the whole API surface in one place.
func routes(d Deps, limiter *sourceLimiter) []route {
	return []route{
		{method: "GET", pattern: "/openapi.yaml", handler: handleOpenAPI(), public: true},
		{method: "GET", pattern: "/docs", handler: handleDocs(), public: true},
		{method: "GET", pattern: "/docs/*", handler: handleDocs(), public: true, asset: true},

		{method: "GET", pattern: "/v1/team", handler: handleTeamGet(d.Logger, d.Teams)},

		{method: "GET", pattern: "/v1/clusters", handler: handleClusterList(d.Logger, d.Clusters)},
		{method: "POST", pattern: "/v1/clusters", handler: handleClusterRegister(d.Logger, d.Registrations), roles: admins, humanOnly: true},
		{method: "GET", pattern: "/v1/clusters/{cluster_id}", handler: handleClusterGet(d.Logger, d.Clusters)},
		{method: "DELETE", pattern: "/v1/clusters/{cluster_id}", handler: clusterJob(d.Logger, d.Registrations.Remove), roles: admins, humanOnly: true},
		{method: "POST", pattern: "/v1/clusters/{cluster_id}/access/reconcile", handler: clusterJob(d.Logger, d.Registrations.Reconcile), roles: admins, humanOnly: true},
		{method: "POST", pattern: "/v1/clusters/{cluster_id}/access/can-i", handler: handleCanI(d.Logger, d.AccessReviews)},
		{method: "PUT", pattern: "/v1/clusters/{cluster_id}/gitops-repo", handler: handleGitOpsRepoPut(d.Logger, d.Clusters), roles: admins, humanOnly: true},
		{method: "GET", pattern: "/v1/clusters/{cluster_id}/gitops-repo/tree", handler: handleRepoTree(d.Logger, d.RepoView)},
		{method: "GET", pattern: "/v1/clusters/{cluster_id}/gitops-repo/file", handler: handleRepoFile(d.Logger, d.RepoView)},

		{method: "GET", pattern: "/v1/aws/onboarding", handler: handleOnboarding(d.Logger, d.Accounts), roles: people},
		{method: "POST", pattern: "/v1/aws/accounts", handler: handleAccountCreate(d.Logger, d.Accounts), roles: admins, humanOnly: true},
		{method: "GET", pattern: "/v1/aws/accounts", handler: handleAccountList(d.Logger, d.Accounts), roles: people},
		{method: "GET", pattern: "/v1/aws/accounts/{account_id}", handler: handleAccountGet(d.Logger, d.Accounts), roles: people},
		{method: "DELETE", pattern: "/v1/aws/accounts/{account_id}", handler: handleAccountDelete(d.Logger, d.Accounts), roles: admins, humanOnly: true},
		{method: "PUT", pattern: "/v1/aws/accounts/{account_id}/access-level", handler: handleAccessLevelPut(d.Logger, d.Switches), roles: admins, humanOnly: true},
		{method: "GET", pattern: "/v1/aws/accounts/{account_id}/access-changes", handler: handleAccessChanges(d.Logger, d.Switches), roles: people},
		// SNS authenticates by signature: no token (security: [] in the document).
		{method: "POST", pattern: "/webhooks/aws/sns", handler: handleSNSWebhook(d.Logger, d.Webhook, limiter, d.TrustedProxies), public: true},

		{method: "GET", pattern: "/v1/argocd/clusters", handler: handleArgoCDSidebar(d.Logger, d.ArgoCD)},
		{method: "GET", pattern: "/v1/clusters/{cluster_id}/argocd/applications", handler: handleAppList(d.Logger, d.ArgoCD)},
		{method: "GET", pattern: "/v1/clusters/{cluster_id}/argocd/applications/{app_id}", handler: handleAppDetail(d.Logger, d.ArgoCD)},
		{method: "GET", pattern: "/v1/clusters/{cluster_id}/argocd/applications/{app_id}/kukie-history", handler: handleKukieHistory(d.Logger, d.ArgoCD)},
		{method: "POST", pattern: "/v1/clusters/{cluster_id}/argocd/ownership", handler: handleOwnership(d.Logger, d.ArgoCD)},
		{method: "GET", pattern: "/v1/clusters/{cluster_id}/argocd/applications/{app_id}/manifests", handler: handleAppManifests(d.Logger, d.RepoView)},
		{method: "POST", pattern: "/v1/clusters/{cluster_id}/argocd/applications/{app_id}/pause-plan", handler: handleSyncPlan(d.Logger, d.SyncPauses, false), roles: agentOnly},
		{method: "POST", pattern: "/v1/clusters/{cluster_id}/argocd/applications/{app_id}/resume-plan", handler: handleSyncPlan(d.Logger, d.SyncPauses, true), roles: agentOnly},

		{method: "POST", pattern: "/v1/tools/repo_tree", handler: handleToolRepoTree(d.Logger, d.RepoView), roles: agentOnly},
		{method: "POST", pattern: "/v1/tools/repo_file", handler: handleToolRepoFile(d.Logger, d.RepoView), roles: agentOnly},
		{method: "POST", pattern: "/v1/tools/app_manifests", handler: handleToolAppManifests(d.Logger, d.RepoView), roles: agentOnly},
		{method: "POST", pattern: "/v1/tools/git_change", handler: handleToolGitChange(d.Logger, d.GitChanges), roles: agentOnly},

		{method: "POST", pattern: "/v1/plans", handler: handlePlanCreate(d.Logger, d.Plans), roles: agentOnly},
		{method: "GET", pattern: "/v1/plans", handler: handlePlanList(d.Logger, d.Plans)},
		{method: "GET", pattern: "/v1/plans/{id}", handler: handlePlanGet(d.Logger, d.Plans)},
		{method: "GET", pattern: "/v1/plans/{id}/git-change", handler: handlePlanGitChange(d.Logger, d.GitChanges)},
		{method: "POST", pattern: "/v1/plans/{id}/approve", handler: handlePlanApprove(d.Logger, d.Plans), roles: people, humanOnly: true},
		{method: "POST", pattern: "/v1/plans/{id}/reject", handler: handlePlanReject(d.Logger, d.Plans), roles: people, humanOnly: true},
		{method: "POST", pattern: "/v1/plans/{id}/result", handler: handlePlanResult(d.Logger, d.Plans), roles: agentOnly},
	}
}

// Endpoint describes one route of the API surface. With Surface it is a
// documented hook for tests outside this package: the tenancy matrix of
// cmd/kukie-server walks every route through the built binary.
type Endpoint struct {
	Method, Pattern string
	// Public routes need no token.
	Public bool
	// Roles a token needs (any one of them); empty means any authenticated caller.
	Roles []service.Role
	// HumanOnly routes refuse tokens carrying the agent role.
	HumanOnly bool
	// Asset routes serve static files under a documented route.
	Asset bool
}

// Surface lists every route as routes declares it (a hook for tests; see
// Endpoint).
func Surface() []Endpoint {
	var out []Endpoint
	for _, r := range routes(Deps{}, nil) {
		out = append(out, Endpoint{Method: r.method, Pattern: r.pattern, Public: r.public, Roles: r.roles,
			HumanOnly: r.humanOnly, Asset: r.asset})
	}
	return out
}

package ownership

import (
	"context"
	"slices"
	"strings"

	"github.com/kukie/gitops-server/service"
)

// targetAccess asks, on a LIMITED cluster, whether Kukie's connection may
// make the change to each target whose kind resolved (a
// SelfSubjectAccessReview for the verb the tool implies), so the card can
// say a change will be refused before anything runs. It never blocks:
// a review that fails is Allowed nil with the reason.
func (d *Detector) targetAccess(ctx context.Context, c service.Cluster, read []target, lang string) []service.TargetAccess {
	if d.Access == nil || c.AccessLevel != service.AccessLimited {
		return nil
	}
	var out []service.TargetAccess
	for _, t := range read {
		i := t.info
		if i.Resource == "" {
			continue // the kind did not resolve: nothing to ask about
		}
		verb, sub := toolVerb(t.ref.Tool, i.Found)
		ns := ""
		if i.Namespaced {
			ns = i.Namespace
		}
		ta := service.TargetAccess{Group: i.Group, Kind: i.Kind, Namespace: ns, Name: i.Name, Verb: verb,
			Resource: i.Resource, Subresource: sub}
		a, err := d.Access.Review(ctx, c, service.AccessQuestion{Verb: verb, Group: i.Group, Resource: i.Resource,
			Subresource: sub, Namespace: ns, Name: i.Name})
		if err != nil {
			ta.Reason = reviewFailed(lang, budgetOrReason(ctx, err))
		} else {
			allowed := a.Allowed
			ta.Allowed = &allowed
			if !allowed {
				ta.Reason = refused(lang, c, ta)
			}
		}
		out = append(out, ta)
	}
	return out
}

// toolVerb is the verb (and subresource) a tool's change needs:
// scale_resource patches the scale subresource, apply_manifest creates
// what does not exist yet and patches what does, delete_resource
// deletes, and every other change patches.
func toolVerb(tool string, found bool) (string, string) {
	switch tool {
	case "scale_resource":
		return "patch", "scale"
	case "apply_manifest":
		if !found {
			return "create", ""
		}
	case "delete_resource":
		return "delete", ""
	}
	return "patch", ""
}

func budgetOrReason(ctx context.Context, err error) service.Reason {
	if r := service.ErrorReason(err); r != "" {
		return r
	}
	return budgetOr(ctx, service.ReasonClusterUnreachable)
}

// refused says why a limited cluster refuses the change. RBAC gives no
// reason when no rule matches, so the sentence comes from what the level
// grants: edit rights in the registered namespaces the stack allows.
func refused(lang string, c service.Cluster, a service.TargetAccess) string {
	what := a.Resource
	if a.Subresource != "" {
		what += "/" + a.Subresource
	}
	allowed := strings.Join(c.Namespaces, ", ")
	if allowed == "" {
		allowed = "-"
	}
	en := lang == "en"
	switch {
	case a.Namespace == "" && en:
		return "This will be refused: on a limited cluster Kukie has no cluster-wide rights to " + a.Verb + " " + what + "."
	case a.Namespace == "":
		return "거부될 거예요: 제한된 클러스터에서 Kukie는 클러스터 범위의 " + what + "에 " + a.Verb + " 권한이 없어요."
	case !slices.Contains(c.Namespaces, a.Namespace) && en:
		return "This will be refused: namespace " + a.Namespace + " is outside the allowed namespaces (" + allowed + ")."
	case !slices.Contains(c.Namespaces, a.Namespace):
		return "거부될 거예요: 네임스페이스 " + a.Namespace + "는 허용된 네임스페이스(" + allowed + ") 밖이에요."
	case en:
		return "This will be refused: Kukie's edit access in namespace " + a.Namespace + " does not allow " + a.Verb + " on " + what + "."
	}
	return "거부될 거예요: 네임스페이스 " + a.Namespace + "에서 Kukie의 edit 권한으로는 " + what + "에 " + a.Verb + "할 수 없어요."
}

func reviewFailed(lang string, reason service.Reason) string {
	if lang == "en" {
		return "Kukie could not ask the cluster whether it may make this change (" + string(reason) + ")."
	}
	return "이 변경을 할 수 있는지 클러스터에 묻지 못했어요 (" + string(reason) + ")."
}

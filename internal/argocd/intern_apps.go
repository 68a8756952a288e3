package argocd

import "github.com/kukie/gitops-server/service"

// InternApps makes the strings of apps that were not decoded from a
// cluster's response — another replica's shared snapshot, decoded by the
// snapshot cache — as canonical as DecodeApplication makes them: values
// that repeat across clusters come from the table, values that repeat
// within the snapshot are shared within it. It changes strings only for
// equal ones, so the apps mean the same.
func (s *Strings) InternApps(apps []service.Application) {
	in := newInterner(s)
	defer in.flush()
	shared := func(p *string) {
		if *p != "" {
			*p = in.shared([]byte(*p))
		}
	}
	local := func(p *string) {
		if *p != "" {
			*p = in.local([]byte(*p))
		}
	}
	for i := range apps {
		a := &apps[i]
		local(&a.ID)
		local(&a.Name)
		shared(&a.Namespace)
		shared(&a.Project)
		shared(&a.SyncStatus)
		shared(&a.HealthStatus)
		shared(&a.Destination.Server)
		shared(&a.Destination.Name)
		shared(&a.Destination.Namespace)
		shared(&a.LevelReason)
		for j := range a.Sources {
			shared(&a.Sources[j].RepoURL)
			shared(&a.Sources[j].TargetRevision)
			local(&a.Sources[j].Path)
		}
		if a.Operation != nil {
			shared(&a.Operation.Phase)
			shared(&a.Operation.InitiatedBy)
		}
		for j := range a.Resources {
			r := &a.Resources[j]
			shared(&r.Group)
			shared(&r.Version)
			shared(&r.Kind)
			shared(&r.Namespace)
			local(&r.Name)
			shared(&r.Status)
			shared(&r.RowCause)
			shared(&r.RowReason)
			if r.Health != nil {
				r.Health = in.healthOf([]byte(*r.Health))
			}
		}
		for j := range a.Conditions {
			shared(&a.Conditions[j].Type)
			local(&a.Conditions[j].Message)
		}
		for j := range a.History {
			shared(&a.History[j].Revision)
			shared(&a.History[j].InitiatedBy)
		}
		shared(&a.Sync.Revision)
	}
}

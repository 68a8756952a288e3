package argocd

// policyDoc is spec.syncPolicy as far as reverting goes.
type policyDoc struct {
	respect bool // syncOptions holds RespectIgnoreDifferences=true
	// automated is set when spec.syncPolicy.automated is an object, enabled
	// unless its enabled member is anything but true.
	automated, enabled bool
	selfHeal, prune    bool
}

// levels: auto-sync is on when automated is present and enabled is absent
// or true (enabled exists since Argo CD 3.1); selfHeal and prune count only
// with auto-sync on. "automated: {}" is on; null or another type is off.
func (p policyDoc) levels() (autoSync, selfHeal, prune bool) {
	if !p.automated || !p.enabled {
		return false, false, false
	}
	return true, p.selfHeal, p.prune
}

func (d *ApplicationDecoder) syncPolicy() policyDoc {
	w := &d.w
	var p policyDoc
	w.object(func(name []byte) {
		switch string(name) {
		case "syncOptions":
			p.respect = false
			w.array(func() {
				// Argo CD matches sync options exactly.
				if t, ok := w.text(); ok && string(t) == "RespectIgnoreDifferences=true" {
					p.respect = true
				}
			})
		case "automated":
			p.selfHeal, p.prune = false, false
			p.enabled = true
			p.automated = w.object(func(name []byte) {
				switch string(name) {
				case "enabled":
					p.enabled = w.boolean()
				case "selfHeal":
					p.selfHeal = w.boolean()
				case "prune":
					p.prune = w.boolean()
				default:
					w.skip()
				}
			})
		default:
			w.skip()
		}
	})
	return p
}

package argocd

import (
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

func TestWarningFor(t *testing.T) {
	cases := map[string]struct {
		level         service.Level
		cause         string
		manifestPaths bool
		en, ko        string // a part of each sentence; "=" means Warning(level)
		notEN         string
	}{
		"SelfHeal":          {service.LevelSelfHeal, service.CausePolicy, false, "=", "=", ""},
		"SelfHealWithPaths": {service.LevelSelfHeal, service.CausePolicy, true, "=", "=", ""},
		"AutoSync":          {service.LevelAutoSync, service.CausePolicy, false, "even an unrelated one", "관계없는", ""},
		"AutoSyncWithPaths": {service.LevelAutoSync, service.CausePolicy, true, "manifest-generate-paths", "manifest-generate-paths", "unrelated"},
		"IgnoredWithPaths":  {service.LevelAutoSync, service.CauseIgnoreDifferences, true, "manifest-generate-paths", "manifest-generate-paths", "unrelated"},
		"Paused":            {service.LevelAutoSync, service.CauseSelfHealPaused, false, "last sync to this revision failed", "마지막 sync가 실패", "unrelated"},
		"PausedWithPaths":   {service.LevelAutoSync, service.CauseSelfHealPaused, true, "touching the app's manifest-generate-paths", "manifest-generate-paths", "unrelated"},
		"SkipReconcile":     {service.LevelNotReverted, service.CauseSkipReconcile, true, "skip-reconcile", "skip-reconcile", "ignores the changed fields"},
		"NotInGit":          {service.LevelNotReverted, service.CauseNotInGit, false, "Git does not set", "Git이 정하지 않아서", "ignores"},
		"IgnoreRespected":   {service.LevelNotReverted, service.CauseIgnoreDifferences, false, "=", "=", ""},
		"Manual":            {service.LevelManual, service.CausePolicy, true, "=", "=", ""},
		"Unreadable":        {service.LevelUnknown, service.CausePolicyUnreadable, false, "=", "=", ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			for _, lang := range []string{"en", "ko"} {
				got := WarningFor(c.level, c.cause, c.manifestPaths, lang)
				want := c.en
				if lang == "ko" {
					want = c.ko
				}
				if want == "=" {
					if got != Warning(c.level, lang) {
						t.Errorf("%s: %q, want the level's sentence", lang, got)
					}
					continue
				}
				if got == "" || !strings.Contains(got, want) {
					t.Errorf("%s: %q, want it to contain %q", lang, got, want)
				}
				if lang == "en" && c.notEN != "" && strings.Contains(got, c.notEN) {
					t.Errorf("en: %q must not say %q", got, c.notEN)
				}
			}
		})
	}
}

// TestRevertWarning checks the self_heal sentence that names the value, in
// both languages, with the Korean particle chosen by how the value ends.
func TestRevertWarning(t *testing.T) {
	for _, c := range []struct {
		field, value string
		more         int
		lang, want   string
	}{
		{"replicas", "1", 0, "ko", "곧 ArgoCD가 replicas 값을 1로 되돌려요. 유지하려면 sync를 멈추거나 PR을 같이 올리세요."},
		{"replicas", "3", 2, "ko", "곧 ArgoCD가 replicas 값을 3으로 되돌려요(외 2개 필드도). 유지하려면 sync를 멈추거나 PR을 같이 올리세요."},
		{"image", "nginx:1.27", 0, "ko", "곧 ArgoCD가 image 값을 nginx:1.27로 되돌려요. 유지하려면 sync를 멈추거나 PR을 같이 올리세요."},
		{"mode", "fast", 0, "ko", "곧 ArgoCD가 mode 값을 fast(으)로 되돌려요. 유지하려면 sync를 멈추거나 PR을 같이 올리세요."},
		{"tier", "웹", 0, "ko", "곧 ArgoCD가 tier 값을 웹으로 되돌려요. 유지하려면 sync를 멈추거나 PR을 같이 올리세요."},
		{"tier", "서버", 0, "ko", "곧 ArgoCD가 tier 값을 서버로 되돌려요. 유지하려면 sync를 멈추거나 PR을 같이 올리세요."},
		{"replicas", "1", 0, "en", "Argo CD will soon set replicas back to 1. To keep it, pause sync or open a PR with the same change."},
		{"replicas", "1", 1, "en", "Argo CD will soon set replicas back to 1, and 1 more field. To keep it, pause sync or open a PR with the same change."},
		{"replicas", "1", 3, "en", "Argo CD will soon set replicas back to 1, and 3 more fields. To keep it, pause sync or open a PR with the same change."},
	} {
		if got := RevertWarning(c.field, c.value, c.more, c.lang); got != c.want {
			t.Errorf("RevertWarning(%s, %s, %d, %s)\n got %s\nwant %s", c.field, c.value, c.more, c.lang, got, c.want)
		}
	}
	if WarningFor(service.LevelNotReverted, service.CauseMatchesGit, false, "en") == Warning(service.LevelNotReverted, "en") {
		t.Error("matches_git has no sentence of its own")
	}
}

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

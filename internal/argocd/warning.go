package argocd

import (
	"fmt"
	"unicode/utf8"

	"github.com/kukie/gitops-server/service"
)

// Warning is the approval card's sentence for a level, in Korean (the
// product's language) or English.
func Warning(l service.Level, lang string) string {
	if lang == "en" {
		return warningsEN[l]
	}
	return warningsKO[l]
}

// WarningFor is the approval card's sentence for a Decision: the level's
// sentence, made true for what decided it. An app with
// manifest-generate-paths (manifestPaths) syncs only commits that touch
// those paths (util/webhook/webhook.go, controller/state.go
// evaluateRevisionChanges), so its auto-sync sentence does not speak of any
// Git change.
func WarningFor(level service.Level, cause string, manifestPaths bool, lang string) string {
	key := warningKey{level, cause, manifestPaths}
	switch {
	case cause == service.CauseSkipReconcile || cause == service.CauseNotInGit || cause == service.CauseMatchesGit ||
		cause == service.CauseSelfHealPaused:
		key.manifestPaths = manifestPaths && cause == service.CauseSelfHealPaused
	case level == service.LevelAutoSync:
		key.cause = ""
	default:
		return Warning(level, lang)
	}
	table := causeWarningsKO
	if lang == "en" {
		table = causeWarningsEN
	}
	if w, ok := table[key]; ok {
		return w
	}
	return Warning(level, lang)
}

// warningKey picks a sentence of WarningFor.
type warningKey struct {
	level         service.Level
	cause         string
	manifestPaths bool
}

var causeWarningsKO = map[warningKey]string{
	{service.LevelNotReverted, service.CauseSkipReconcile, false}: "앱에 skip-reconcile이 설정돼 있어 ArgoCD가 이 앱을 처리하지 않아요. 이 변경은 되돌아가지 않아요.",
	{service.LevelNotReverted, service.CauseNotInGit, false}:      "바뀌는 필드를 Git이 정하지 않아서 ArgoCD가 되돌리지 않아요.",
	{service.LevelNotReverted, service.CauseMatchesGit, false}:    "바꾸려는 값이 Git에 있는 값과 같아서 ArgoCD가 되돌릴 것이 없어요.",
	{service.LevelAutoSync, service.CauseSelfHealPaused, false}: "지금은 되돌아가지 않아요: 이 리비전으로의 마지막 sync가 실패해서 ArgoCD가 self-heal을 멈췄어요. " +
		"새 커밋이 오거나 sync가 성공하면 되돌아가요. 유지하려면 PR을 같이 올리세요.",
	{service.LevelAutoSync, service.CauseSelfHealPaused, true}: "지금은 되돌아가지 않아요: 이 리비전으로의 마지막 sync가 실패해서 ArgoCD가 self-heal을 멈췄어요. " +
		"앱의 경로(manifest-generate-paths)를 건드리는 새 커밋이 오거나 sync가 성공하면 되돌아가요. 유지하려면 PR을 같이 올리세요.",
	{service.LevelAutoSync, "", true}: "이 앱의 경로(manifest-generate-paths)를 건드리는 다음 Git 변경이 동기화될 때 ArgoCD가 되돌려요. 유지하려면 PR을 같이 올리세요.",
}

var causeWarningsEN = map[warningKey]string{
	{service.LevelNotReverted, service.CauseSkipReconcile, false}: "The app has skip-reconcile set, so Argo CD does not process it and will not revert this change.",
	{service.LevelNotReverted, service.CauseNotInGit, false}:      "Git does not set the changed fields, so Argo CD will not revert this change.",
	{service.LevelNotReverted, service.CauseMatchesGit, false}:    "The planned values are what Git already sets, so Argo CD has nothing to revert.",
	{service.LevelAutoSync, service.CauseSelfHealPaused, false}: "Argo CD will not revert this now: the last sync to this revision failed, so it does not self-heal " +
		"until a new commit or a successful sync, which will revert this. To keep it, open a PR with the same change.",
	{service.LevelAutoSync, service.CauseSelfHealPaused, true}: "Argo CD will not revert this now: the last sync to this revision failed, so it does not self-heal " +
		"until a new commit touching the app's manifest-generate-paths or a successful sync, which will revert this. " +
		"To keep it, open a PR with the same change.",
	{service.LevelAutoSync, "", true}: "Argo CD will revert this when it syncs the next Git change to this app's paths (manifest-generate-paths). " +
		"To keep it, open a PR with the same change.",
}

var warningsKO = map[service.Level]string{
	service.LevelSelfHeal:    "곧 ArgoCD가 되돌려요. 유지하려면 sync를 멈추거나 PR을 같이 올리세요.",
	service.LevelUnknown:     "ArgoCD가 관리하는 리소스지만 sync 설정을 읽을 수 없어 언제 되돌아갈지 알 수 없어요. 유지하려면 PR을 같이 올리세요.",
	service.LevelAutoSync:    "다음 Git 변경이 동기화될 때 ArgoCD가 되돌려요(관계없는 변경이어도). 유지하려면 PR을 같이 올리세요.",
	service.LevelManual:      "ArgoCD가 스스로 되돌리지는 않지만 앱이 OutOfSync로 보이고, 다음 sync 때 되돌아가요.",
	service.LevelNotReverted: "앱이 바뀌는 필드를 무시하도록 설정돼 있어 ArgoCD가 되돌리지 않아요.",
}

var warningsEN = map[service.Level]string{
	service.LevelSelfHeal:    "Argo CD will revert this soon. To keep it, pause sync or open a PR with the same change.",
	service.LevelUnknown:     "Argo CD manages this resource, but its sync policy cannot be read, so when it will be reverted is unknown. To keep it, open a PR with the same change.",
	service.LevelAutoSync:    "Argo CD will revert this at the next Git change it syncs, even an unrelated one. To keep it, open a PR with the same change.",
	service.LevelManual:      "Argo CD will not revert this by itself, but the app will show OutOfSync and the next sync will undo it.",
	service.LevelNotReverted: "The app ignores the changed fields, so Argo CD will not revert this change.",
}

// RevertWarning is the self_heal sentence naming what Argo CD puts back:
// the first reverted field (the last token of its pointer) and its Git
// value as text, and how many more fields are reverted too.
func RevertWarning(field, value string, more int, lang string) string {
	if lang == "en" {
		s := "Argo CD will soon set " + field + " back to " + value
		if more > 0 {
			s += fmt.Sprintf(", and %d more field%s", more, plural(more))
		}
		return s + ". To keep it, pause sync or open a PR with the same change."
	}
	s := "곧 ArgoCD가 " + field + " 값을 " + value + particleRo(value) + " 되돌려요"
	if more > 0 {
		s += fmt.Sprintf("(외 %d개 필드도)", more)
	}
	return s + ". 유지하려면 sync를 멈추거나 PR을 같이 올리세요."
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// particleRo is the Korean particle 로 or 으로 after s, by how s ends: a
// Hangul syllable by its final consonant (ㄹ takes 로), a digit as it is
// read; anything else gets the neutral "(으)로".
func particleRo(s string) string {
	r, _ := utf8.DecodeLastRuneInString(s)
	switch {
	case r >= '가' && r <= '힣':
		final := (r - '가') % 28
		if final == 0 || final == 8 { // no final consonant, or ㄹ
			return "로"
		}
		return "으로"
	case r >= '0' && r <= '9':
		if r == '0' || r == '3' || r == '6' {
			return "으로" // 영, 삼, 육
		}
		return "로"
	}
	return "(으)로"
}

package service

import "fmt"

// pauseNote names a stop-sync note.
type pauseNote int

// The stop-sync notes: a parent paused first, a parent whose policy
// cannot be read, an ApplicationSet that cannot be read, the ignore rule
// the pause adds, and that rule left for a hand removal at resume.
const (
	noteParentFirst pauseNote = iota
	noteParentUnknown
	noteSetUnreadable
	noteSetRule
	noteSetRuleUnremoved
)

// pauseTexts are the stop-sync plans' card notes, in the warning
// languages (Korean, the product's own, and English), by note.
var pauseTexts = map[pauseNote][2]string{
	noteParentFirst: {
		"이 Application을 self-heal로 관리하는 앱 %[1]s의 sync가 정책을 되돌리므로 그 앱을 먼저 멈춰요. " +
			"멈춘 동안 그 앱의 다른 하위 앱들의 spec도 Git을 따르지 않아요",
		"App %[1]s manages this Application with self-heal and would put its sync policy back, so it is paused first. " +
			"While it is paused, the specs of its other child apps stop following Git too",
	},
	noteParentUnknown: {
		"이 Application을 관리하는 앱 %[1]s의 sync 정책을 여기서 읽을 수 없어요(Argo CD가 다른 클러스터에 있을 수 있어요). " +
			"그 앱이 이 앱의 sync 정책을 되돌릴 수 있어요.",
		"App %[1]s manages this Application, but its sync policy cannot be read here (its Argo CD may run in another cluster): " +
			"it may put this app's sync policy back.",
	},
	noteSetUnreadable: {
		"이 앱을 만드는 ApplicationSet %[1]s의 내용을 여기서 읽을 수 없어서, 멈춤을 되돌릴지 Kukie가 알 수 없어요. " +
			"그 ApplicationSet의 ignoreApplicationDifferences가 앱 %[2]s의 /spec/syncPolicy를 덮는지 확인하세요.",
		"ApplicationSet %[1]s generates this app and cannot be read here, so Kukie cannot tell whether it will undo the pause: " +
			"make sure its ignoreApplicationDifferences covers /spec/syncPolicy for %[2]s.",
	},
	noteSetRule: {
		"ApplicationSet %[1]s의 컨트롤러가 이 앱의 spec을 다시 써서 멈춤을 되돌리므로, 먼저 그 ApplicationSet에 " +
			"이 앱의 /spec/syncPolicy를 무시하는 ignoreApplicationDifferences 규칙을 추가해요(재개할 때 제거해요).",
		"ApplicationSet %[1]s rewrites this app's spec and would undo the pause, so the plan first adds an ignoreApplicationDifferences rule " +
			"for the app's /spec/syncPolicy (the resume removes it).",
	},
	noteSetRuleUnremoved: {
		"ApplicationSet %[1]s의 내용을 여기서 읽을 수 없어요. 멈출 때 추가한 ignoreApplicationDifferences 규칙(앱 %[2]s)을 직접 제거하세요. " +
			"그대로 두면 이 앱의 /spec/syncPolicy가 템플릿을 따르지 않아요.",
		"ApplicationSet %[1]s cannot be read here: remove the ignoreApplicationDifferences rule the pause added for %[2]s by hand, " +
			"or its /spec/syncPolicy stays out of the template's reach.",
	},
}

// pauseText is a stop-sync note in lang ("en", else Korean).
func pauseText(lang string, key pauseNote, args ...any) string {
	t := pauseTexts[key]
	if lang == "en" {
		return fmt.Sprintf(t[1], args...)
	}
	return fmt.Sprintf(t[0], args...)
}

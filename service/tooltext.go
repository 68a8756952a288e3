package service

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxToolText is how long a chat read tool's text may be, in Unicode code
// points, its final line included.
const MaxToolText = 24000

// ToolText cuts text to at most limit code points for the model: whole
// lines are kept while they fit, and a final line says how many
// characters were cut. A single line longer than the room left is cut
// inside it, on a code-point boundary. truncated reports a cut.
func ToolText(text string, limit int, lang string) (out string, truncated bool) {
	total := utf8.RuneCountInString(text)
	if total <= limit {
		return text, false
	}
	// The final line's length depends on the number it reports; the
	// number cannot exceed total, so reserve room for that.
	note := func(cut int) string {
		if lang == "en" {
			return fmt.Sprintf("\n… %d more characters cut.", cut)
		}
		return fmt.Sprintf("\n… %d자 더 있어 잘랐어요.", cut)
	}
	room := limit - utf8.RuneCountInString(note(total))
	if room < 0 {
		room = 0
	}
	var b strings.Builder
	kept := 0
	for line := range strings.SplitAfterSeq(text, "\n") {
		n := utf8.RuneCountInString(line)
		if kept+n > room {
			if kept == 0 { // one long first line: cut inside it
				for _, r := range line {
					if kept == room {
						break
					}
					b.WriteRune(r)
					kept++
				}
			}
			break
		}
		b.WriteString(line)
		kept += n
	}
	kept = utf8.RuneCountInString(strings.TrimSuffix(b.String(), "\n"))
	return strings.TrimSuffix(b.String(), "\n") + note(total-kept), true
}

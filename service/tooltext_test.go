package service

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestToolText(t *testing.T) {
	short := "a\nb\n"
	if got, cut := ToolText(short, 10, "en"); got != short || cut {
		t.Errorf("short text changed: %q %v", got, cut)
	}
	// Multi-byte lines: the cut lands on line and code-point boundaries,
	// and the result, final line included, is within the limit.
	line := strings.Repeat("가", 99) + "\n" // 100 code points, 298 bytes
	text := strings.Repeat(line, 300)      // 30,000 code points
	for _, lang := range []string{"ko", "en"} {
		got, cut := ToolText(text, MaxToolText, lang)
		if !cut || !utf8.ValidString(got) || utf8.RuneCountInString(got) > MaxToolText {
			t.Fatalf("%s: cut %v, %d code points, valid %v", lang, cut, utf8.RuneCountInString(got), utf8.ValidString(got))
		}
		lines := strings.Split(got, "\n")
		last := lines[len(lines)-1]
		if !strings.Contains(last, "…") {
			t.Errorf("%s: final line %q does not say what was cut", lang, last)
		}
		for _, l := range lines[:len(lines)-1] {
			if utf8.RuneCountInString(l) != 99 {
				t.Fatalf("%s: a kept line was cut: %d code points", lang, utf8.RuneCountInString(l))
			}
		}
		kept := len(lines) - 1
		wantCut := 30000 - (kept*100 - 1)
		if !strings.Contains(last, strconv.Itoa(wantCut)) {
			t.Errorf("%s: final line %q, want %d characters cut", lang, last, wantCut)
		}
	}
	// One enormous line is cut inside it, on a code-point boundary.
	got, cut := ToolText(strings.Repeat("😀", 30000), MaxToolText, "en")
	if !cut || !utf8.ValidString(got) || utf8.RuneCountInString(got) > MaxToolText || !strings.HasPrefix(got, "😀😀") {
		t.Errorf("long line: cut %v, %d code points", cut, utf8.RuneCountInString(got))
	}
}

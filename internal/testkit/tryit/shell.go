package tryit

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// Shell renders a line as a shell command line, preceded by its "say" as a
// comment. Variables with a value in fill are written in; the others stay
// shell variables ($AGENT, $CLUSTER_ID), which the reader sets (make run
// prints the tokens; lines that save a value assign it). sandbox is how the
// kukie-sandbox binary is invoked (make run: .dev/bin/kukie-sandbox).
func (l Line) Shell(fill map[string]string, sandbox string) string {
	var b strings.Builder
	b.WriteString("# " + l.Say + "\n")
	sandbox = word(sandbox, nil)
	if len(l.Command) > 0 {
		words := []string{sandbox}
		for _, a := range l.Command {
			words = append(words, word(a, fill))
		}
		b.WriteString(strings.Join(words, " "))
		return b.String()
	}
	curl := l.curl(fill)
	switch {
	case len(l.Until) > 0:
		fields, values := l.untilFields()
		b.WriteString("until " + curl + " | " + sandbox + " pick " + strings.Join(fields, " ") + " | grep -qx " +
			word(strings.Join(values, " "), fill) + "; do sleep 1; done")
	case l.Save != nil:
		b.WriteString(l.Save.Var + "=$(" + curl + " | " + sandbox + " pick " + l.Save.Field + ") && echo \"" +
			l.Save.Var + "=$" + l.Save.Var + "\"")
	default:
		b.WriteString(curl)
	}
	return b.String()
}

func (l Line) curl(fill map[string]string) string {
	words := []string{"curl -s"}
	if l.Method != "GET" {
		words = append(words, "-X "+l.Method)
	}
	words = append(words, word("${API}"+l.Path, fill))
	if l.Token != "" {
		words = append(words, "-H "+word("Authorization: Bearer ${"+l.Token+"}", fill))
	}
	if len(l.Body) > 0 {
		var compact bytes.Buffer
		_ = json.Compact(&compact, l.Body)
		words = append(words, "-H 'Content-Type: application/json'", "-d "+word(compact.String(), fill))
	}
	return strings.Join(words, " ")
}

// bare matches a word the shell reads as itself, unquoted.
var bare = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// word quotes s as one shell word, writing in the variables fill has and
// leaving the others as shell variables: in double quotes when the text
// allows, else single-quoted runs joined to "$VAR"s.
func word(s string, fill map[string]string) string {
	type part struct {
		text  string
		isVar bool
	}
	var parts []part
	last := 0
	for _, m := range variable.FindAllStringSubmatchIndex(s, -1) {
		name := s[m[2]:m[3]]
		parts = append(parts, part{text: s[last:m[0]]})
		if v, ok := fill[name]; ok {
			parts = append(parts, part{text: v})
		} else {
			parts = append(parts, part{text: name, isVar: true})
		}
		last = m[1]
	}
	parts = append(parts, part{text: s[last:]})
	// Written-in values join the text around them.
	merged := parts[:1]
	for _, p := range parts[1:] {
		if prev := &merged[len(merged)-1]; !p.isVar && !prev.isVar {
			prev.text += p.text
			continue
		}
		merged = append(merged, p)
	}
	parts = merged
	literal := ""
	for _, p := range parts {
		if !p.isVar {
			literal += p.text
		}
	}
	if len(parts) == 1 && bare.MatchString(literal) {
		return literal
	}
	var b strings.Builder
	if !strings.ContainsAny(literal, "\"$`\\!") {
		b.WriteByte('"')
		for _, p := range parts {
			if p.isVar {
				b.WriteString("${" + p.text + "}")
			} else {
				b.WriteString(p.text)
			}
		}
		b.WriteByte('"')
		return b.String()
	}
	for _, p := range parts {
		switch {
		case p.isVar:
			b.WriteString(`"${` + p.text + `}"`)
		case p.text != "":
			b.WriteString("'" + strings.ReplaceAll(p.text, "'", `'\''`) + "'")
		}
	}
	return b.String()
}

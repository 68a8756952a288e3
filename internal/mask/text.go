package mask

import (
	"encoding/base64"
	"regexp"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// pass is the state of one masking run: the secrets gitleaks found in the
// input, and what was done so far.
type pass struct {
	scan      *scanner
	secrets   []string
	masked    int
	encrypted bool
	// redact collects the values replaced (Result.Redactions).
	redact Redactions
	// decoded marks a pass over base64-decoded text, which is not decoded
	// again.
	decoded bool
	// aliased holds alias targets already masked, so that cycles end.
	aliased map[*yaml.Node]bool
}

var (
	// privateKeyBlock matches a PEM private key; an unterminated block is
	// masked to the end of the text.
	privateKeyBlock = regexp.MustCompile(`(?is)(-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)(.*?)(-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|\z)`)
	// urlPassword matches the password of scheme://user:password@host.
	urlPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^:@/\s'"]*:)([^@\s'"]+)@`)
	// lineKV splits "key: value", "key = value", "export KEY=value",
	// `"key": "value",` and "# key: value" lines; groups: prefix, open quote,
	// key, close quote, separator, value.
	lineKV = regexp.MustCompile(`^([ \t]*(?:(?:#+|//|;|-|\*)[ \t]*)?(?:export[ \t]+)?)(["']?)([A-Za-z0-9_.\-/\[\]@$ ]{1,128}?)(["']?)([ \t]*(?:=>|:=|=|:)[ \t]*)(.*)$`)
	// embeddedAssign matches key=value inside a line, as in connection strings
	// and query strings: "Password=p;", "?user=u&password=p".
	embeddedAssign = regexp.MustCompile(`([A-Za-z0-9_.-]{2,64})(=)([^\s&;,'"<>]+)`)
	// embeddedColon matches "key: value" inside a line.
	// The value runs to the next delimiter, spaces included, so that a
	// value folded onto one line with its continuation is masked whole.
	embeddedColon = regexp.MustCompile(`([A-Za-z0-9_.-]{2,64})(:[ \t]+)([^\s,;'"}\]](?:[^,;'"}\]]*[^\s,;'"}\]])?)`)
	// embeddedQuoted matches key: "value" and key='value' inside a line, the
	// quotes unclosed to the end of the line included: a quoted scalar over
	// several lines folded into one.
	embeddedQuoted = regexp.MustCompile(`([A-Za-z0-9_.-]{2,64})(:[ \t]+|[ \t]*=[ \t]*)("(?:[^"\\]|\\.)*(?:"|$)|'[^']*(?:'|$))`)
	// secretData is a Secret's data or stringData key inside one line.
	secretData = regexp.MustCompile(`\b(?:data|stringData)["']?[ \t]*:`)
	// embeddedJSON matches "key": "value" pairs inside a line.
	embeddedJSON = regexp.MustCompile(`"([^"\\]{1,128})"(\s*:\s*)"((?:[^"\\]|\\.)*)"`)
	// blockIndicator is a YAML block scalar header, such as "|" or ">-".
	blockIndicator = regexp.MustCompile(`^[|>][-+0-9]*[ \t]*(?:#.*)?$`)
	// sealedCiphertext is a SealedSecret's encrypted value.
	sealedCiphertext = regexp.MustCompile(`^[A-Za-z0-9+/]{32,}={0,2}$`)
	// ansibleVault is an Ansible Vault-encrypted value.
	ansibleVault = regexp.MustCompile(`^\$ANSIBLE_VAULT;[^\n]*\n[0-9a-fA-F\s]*$`)
	// sopsValue is a SOPS-encrypted value.
	sopsValue = regexp.MustCompile(`^ENC\[[A-Z0-9_]+,data:[A-Za-z0-9+/=]*,iv:[A-Za-z0-9+/=]+,tag:[A-Za-z0-9+/=]+,type:[a-z]+\]$`)
	// reference is a value that only names where a secret comes from: a
	// template action over values, or an environment variable written
	// ${VAR} (shell, compose, envsubst) or $(VAR) (Kubernetes env
	// expansion). A bare $VAR is not one: "$correcthorse77" and
	// "$WELCOME2024" are passwords as often as references, and a reference
	// masked costs the reader less than a password shown.
	reference = regexp.MustCompile(`^(?:\{\{-?[ \t]*[.$][\w.$]*(?:[ \t]*\|[ \t]*[\w ]+)*[ \t]*-?\}\}|\$\{[A-Za-z_][A-Za-z0-9_.]*\}|\$\([A-Za-z_][A-Za-z0-9_]*\))$`)
	// secretKind finds a Kubernetes Secret in text that is not valid YAML:
	// block or flow style, as a list item, quoted or not.
	secretKind = regexp.MustCompile(`\bkind["']?[ \t]*:[ \t]*["']?Secret\b`)
	// aliasedKind is a kind or a merge key taking its value from an alias.
	aliasedKind = regexp.MustCompile(`(?:\bkind|<<)["']?[ \t]*:[ \t]*\*`)
	// docSeparator is a YAML document boundary: "---" at the start of a
	// line, which YAML forbids inside any scalar.
	docSeparator = regexp.MustCompile(`(?m)^---(?:[ \t][^\n]*)?\r?$`)
	// base64Run is a run of text that may be base64 inside a line.
	base64Run = regexp.MustCompile(`[A-Za-z0-9+/]{16,}={0,2}`)
	// base64Value is a value that may be base64-encoded text.
	base64Value = regexp.MustCompile(`^(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`)
)

// maskLines masks text that is not parsed as YAML: env, properties, Helm
// templates, scripts, and YAML that failed to parse.
func (m *Masker) maskLines(text string) Result {
	p := &pass{scan: m.scanner, secrets: m.secrets(text)}
	out := p.text(text, true)
	return Result{Content: []byte(out), Masked: p.masked, Encrypted: p.encrypted, Redactions: p.redact.Merge()}
}

// found masks what is found by its shape wherever it is: gitleaks findings,
// private-key blocks and URL passwords.
func (p *pass) found(s string) string {
	for _, sec := range p.secrets {
		if n := strings.Count(s, sec); n > 0 {
			s = strings.ReplaceAll(s, sec, Marker)
			p.masked += n
			p.record(sec)
		}
	}
	if strings.Contains(strings.ToUpper(s), "PRIVATE KEY") {
		s = privateKeyBlock.ReplaceAllStringFunc(s, p.maskKeyBlock)
	}
	if strings.Contains(s, "://") {
		s = urlPassword.ReplaceAllStringFunc(s, func(match string) string {
			sub := urlPassword.FindStringSubmatch(match)
			if sub[2] == Marker {
				return match
			}
			p.masked++
			p.record(sub[2])
			return sub[1] + Marker + "@"
		})
	}
	return s
}

// text masks secrets anywhere in s: what found masks, and values of
// secret-looking keys along the YAML structure. secretDocs also masks every
// entry of a Kubernetes Secret's data and stringData blocks, document by
// document, for YAML masked as text.
func (p *pass) text(s string, secretDocs bool) string {
	s = p.found(s)
	if !strings.ContainsAny(s, ":=") {
		return s
	}
	if !secretDocs || !secretDoc(s) {
		return p.lines(s, false)
	}
	// Mask each document on its own, so that only Secrets get their data
	// blocks masked whole.
	var b strings.Builder
	for _, doc := range splitDocs(s) {
		b.WriteString(p.lines(doc, secretDoc(doc)))
	}
	return b.String()
}

// secretDoc reports text the scanner masks as a Kubernetes Secret: it says
// kind: Secret, or it holds data or stringData and takes its kind from an
// alias or a merge (<<: *base), which the scanner does not resolve: it
// fails closed.
func secretDoc(s string) bool {
	return secretKind.MatchString(s) || aliasedKind.MatchString(s) && secretData.MatchString(s)
}

// splitDocs cuts a YAML stream before each document marker; the pieces
// joined are the stream.
func splitDocs(s string) []string {
	var docs []string
	last := 0
	for _, loc := range docSeparator.FindAllStringIndex(s, -1) {
		if loc[0] > last {
			docs = append(docs, s[last:loc[0]])
			last = loc[0]
		}
	}
	return append(docs, s[last:])
}

// record adds a masked value to the pass's redactions, and the text it
// decodes to when it is base64 (a Secret's data).
func (p *pass) record(v string) {
	v = strings.TrimSpace(v)
	if len(v) < minSecretLen {
		return
	}
	if strings.Contains(v, Marker) {
		// Parts already masked by another rule: record what is around them.
		for _, part := range strings.Split(v, Marker) {
			p.record(part)
		}
		return
	}
	p.redact.add(v)
	if len(v) <= maxDecodedValue && base64Value.MatchString(v) {
		if dec, err := base64.StdEncoding.DecodeString(v); err == nil && isText(dec) {
			p.redact.add(string(dec))
		}
	}
}

// maxDecodedValue bounds the base64 values decoded (1 MiB encoded).
const maxDecodedValue = 1 << 20

// holdsSecret reports a base64 value (a ConfigMap's binaryData, or data
// written encoded) whose decoded text holds a secret: a gitleaks finding, a
// key block, a URL password or a secret-looking key. It is decoded once, by
// this code: gitleaks' own decoding stays off.
func (p *pass) holdsSecret(v string) bool {
	if p.decoded || len(v) < 16 || len(v) > maxDecodedValue || !base64Value.MatchString(v) {
		return false
	}
	dec, err := base64.StdEncoding.DecodeString(v)
	if err != nil || !isText(dec) {
		return false
	}
	q := &pass{scan: p.scan, secrets: p.scan.secrets(string(dec)), decoded: true}
	q.text(string(dec), true)
	if q.masked == 0 {
		return false
	}
	p.redact = append(p.redact, q.redact...)
	p.redact.add(v)
	return true
}

// isText reports decoded bytes that are UTF-8 text without control
// characters other than whitespace.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// maskKeyBlock keeps a private key's BEGIN and END lines and the body's
// indentation, and replaces the body with one Marker.
func (p *pass) maskKeyBlock(block string) string {
	sub := privateKeyBlock.FindStringSubmatch(block)
	body := sub[2]
	if strings.TrimSpace(body) == Marker {
		return block
	}
	p.masked++
	for _, l := range strings.Split(strings.ReplaceAll(body, `\n`, "\n"), "\n") {
		p.record(l)
	}
	indent := ""
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		rest := body[i+1:]
		indent = rest[:len(rest)-len(strings.TrimLeft(rest, " \t"))]
	}
	tail := ""
	if i := strings.LastIndexByte(body, '\n'); i >= 0 && strings.TrimSpace(body[i+1:]) == "" {
		tail = body[i+1:]
	}
	switch {
	case strings.Contains(body, "\n"):
		return sub[1] + "\n" + indent + Marker + "\n" + tail + sub[3]
	case strings.Contains(body, `\n`):
		return sub[1] + `\n` + Marker + `\n` + sub[3]
	default:
		return sub[1] + Marker + sub[3]
	}
}

// line masks what one line shows by itself: a secret-looking key's value
// written on it (env, properties, comments, "key": "value" lines), and
// secret-looking key=value and key: value pairs inside it.
func (p *pass) line(line string) string {
	if !p.decoded && len(line) >= 16 {
		line = base64Run.ReplaceAllStringFunc(line, func(run string) string {
			if p.holdsSecret(run) {
				p.masked++
				return Marker
			}
			return run
		})
	}
	if !strings.ContainsAny(line, ":=") {
		return line
	}
	if sub := lineKV.FindStringSubmatch(line); sub != nil {
		key, value := strings.TrimSpace(sub[3]), sub[6]
		if strings.HasPrefix(strings.ToLower(key), "sops") {
			p.encrypted = true
			return line
		}
		if isSecretKey(key) {
			head := sub[1] + sub[2] + sub[3] + sub[4] + sub[5]
			if blockIndicator.MatchString(strings.TrimSpace(value)) {
				return line
			}
			if v, ok := p.value(value); ok {
				return head + v
			}
			return line
		}
	}
	if strings.Contains(line, "=") {
		line = embeddedAssign.ReplaceAllStringFunc(line, func(match string) string {
			sub := embeddedAssign.FindStringSubmatch(match)
			if !isSecretKey(sub[1]) || keepValue(p, sub[3]) {
				return match
			}
			p.masked++
			p.record(sub[3])
			return sub[1] + sub[2] + Marker
		})
	}
	if strings.Contains(line, ": ") {
		line = embeddedColon.ReplaceAllStringFunc(line, func(match string) string {
			sub := embeddedColon.FindStringSubmatch(match)
			if !isSecretKey(sub[1]) || keepValue(p, sub[3]) {
				return match
			}
			p.masked++
			p.record(sub[3])
			return sub[1] + sub[2] + Marker
		})
	}
	if strings.ContainsAny(line, `"'`) {
		line = embeddedQuoted.ReplaceAllStringFunc(line, func(match string) string {
			sub := embeddedQuoted.FindStringSubmatch(match)
			q := sub[3][:1]
			v := strings.TrimSuffix(sub[3][1:], q)
			if !isSecretKey(sub[1]) || keepValue(p, v) {
				return match
			}
			p.masked++
			p.record(v)
			return sub[1] + sub[2] + q + Marker + q
		})
	}
	if strings.Contains(line, `"`) {
		line = embeddedJSON.ReplaceAllStringFunc(line, func(match string) string {
			sub := embeddedJSON.FindStringSubmatch(match)
			if !isSecretKey(sub[1]) || keepValue(p, sub[3]) {
				return match
			}
			p.masked++
			p.record(sub[3])
			return `"` + sub[1] + `"` + sub[2] + `"` + Marker + `"`
		})
	}
	return line
}

// value masks a secret value written after a key on one line, keeping its
// quotes and a trailing comma. It reports false when the value stays.
func (p *pass) value(v string) (string, bool) {
	t := strings.TrimSpace(v)
	if t == "" {
		return v, false
	}
	if q := t[0]; q == '"' || q == '\'' {
		end := closingQuote(t, q)
		if end < 0 {
			p.masked++
			p.record(t[1:])
			return string(q) + Marker + string(q), true
		}
		if keepValue(p, t[1:end]) {
			return v, false
		}
		p.masked++
		p.record(t[1:end])
		return string(q) + Marker + string(q) + t[end+1:], true
	}
	body, comma := t, ""
	if strings.HasSuffix(body, ",") {
		body, comma = strings.TrimSuffix(body, ","), ","
	}
	if keepValue(p, body) {
		return v, false
	}
	p.masked++
	p.record(body)
	return Marker + comma, true
}

// closingQuote returns the index of the quote closing t[0], or -1.
func closingQuote(t string, q byte) int {
	for i := 1; i < len(t); i++ {
		switch {
		case t[i] == '\\' && q == '"':
			i++
		case t[i] == q:
			return i
		}
	}
	return -1
}

// keepValue reports whether a value of a secret-looking key stays visible:
// empty, a boolean or null, a reference to where the secret comes from,
// already masked, or SOPS ciphertext (which marks the pass encrypted).
func keepValue(p *pass, v string) bool {
	v = strings.TrimSpace(v)
	switch strings.ToLower(v) {
	case "", "~", "null", "true", "false", "yes", "no", "{}", "[]", `""`, "''", Marker:
		return true
	}
	if sopsValue.MatchString(v) {
		p.encrypted = true
		return true
	}
	return reference.MatchString(v)
}

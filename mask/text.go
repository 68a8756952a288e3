package mask

import (
	"regexp"
	"strings"
)

// pass is the state of one masking run: the secrets gitleaks found in the
// input, and what was done so far.
type pass struct {
	secrets   []string
	masked    int
	encrypted bool
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
	embeddedColon = regexp.MustCompile(`([A-Za-z0-9_.-]{2,64})(:[ \t]+)([^\s,;'"}\]]+)`)
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
	// template action over values, or an environment variable.
	reference = regexp.MustCompile(`^(?:\{\{-?[ \t]*[.$][\w.$]*(?:[ \t]*\|[ \t]*[\w ]+)*[ \t]*-?\}\}|\$\{[A-Za-z_][A-Za-z0-9_.]*\}|\$[A-Za-z_][A-Za-z0-9_]*)$`)
	// secretKind finds a Kubernetes Secret in text that is not valid YAML.
	secretKind = regexp.MustCompile(`(?m)^[ \t]*kind:[ \t]*["']?Secret["']?[ \t]*(?:#.*)?\r?$`)
	// dataSection opens a Secret's data or stringData block.
	dataSection = regexp.MustCompile(`^([ \t]*)(?:data|stringData):[ \t]*(?:#.*)?$`)
	// docSeparator is a YAML document boundary.
	docSeparator = regexp.MustCompile(`(?m)^---[ \t]*(?:#.*)?\r?$`)
)

// maskLines masks text that is not parsed as YAML: env, properties, Helm
// templates, scripts, and YAML that failed to parse.
func (m *Masker) maskLines(text string) Result {
	p := &pass{secrets: m.secrets(text)}
	out := p.text(text, true)
	return Result{Content: []byte(out), Masked: p.masked, Encrypted: p.encrypted}
}

// text masks secrets anywhere in s: gitleaks findings, private-key blocks,
// URL passwords and values of secret-looking keys line by line. secretDocs
// also masks every entry of a Kubernetes Secret's data and stringData blocks,
// for YAML masked as text.
func (p *pass) text(s string, secretDocs bool) string {
	for _, sec := range p.secrets {
		if n := strings.Count(s, sec); n > 0 {
			s = strings.ReplaceAll(s, sec, Marker)
			p.masked += n
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
			return sub[1] + Marker + "@"
		})
	}
	if !strings.ContainsAny(s, ":=") {
		return s
	}
	if !secretDocs || !secretKind.MatchString(s) {
		return p.lines(s, false)
	}
	// Mask each document on its own, so that only Secrets get their data
	// blocks masked whole.
	var b strings.Builder
	last := 0
	for _, loc := range docSeparator.FindAllStringIndex(s, -1) {
		doc := s[last:loc[0]]
		b.WriteString(p.lines(doc, secretKind.MatchString(doc)))
		b.WriteString(s[loc[0]:loc[1]])
		last = loc[1]
	}
	doc := s[last:]
	b.WriteString(p.lines(doc, secretKind.MatchString(doc)))
	return b.String()
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

// lines masks the values of secret-looking keys line by line; inSecret masks
// every entry of data and stringData blocks as well.
func (p *pass) lines(s string, inSecret bool) string {
	ls := strings.Split(s, "\n")
	dataIndent := -1   // indentation of the open data: line, or -1
	blockIndent := -1  // indentation of the key whose block scalar is masked
	blockDone := false // the masked block scalar's Marker line is written
	out := ls[:0]
	for _, line := range ls {
		trimmed := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " \t"))
		if blockIndent >= 0 {
			if trimmed == "" || indent > blockIndent {
				if !blockDone && trimmed != "" {
					out = append(out, line[:indent]+Marker)
					blockDone = true
				}
				continue
			}
			blockIndent = -1
		}
		if dataIndent >= 0 && trimmed != "" && indent <= dataIndent && !strings.HasPrefix(trimmed, "{{") && !strings.HasPrefix(trimmed, "#") {
			dataIndent = -1
		}
		if inSecret {
			if sub := dataSection.FindStringSubmatch(strings.TrimRight(line, "\r")); sub != nil {
				dataIndent = len(sub[1])
				out = append(out, line)
				continue
			}
		}
		masked, block := p.line(line, dataIndent >= 0 && indent > dataIndent)
		if block {
			blockIndent, blockDone = indent, false
		}
		out = append(out, masked)
	}
	return strings.Join(out, "\n")
}

// line masks one line. force masks the value whatever its key (a Secret's
// data entry). block reports a secret value given as a block scalar whose
// following, more indented lines must be masked.
func (p *pass) line(line string, force bool) (masked string, block bool) {
	if !strings.ContainsAny(line, ":=") {
		return line, false
	}
	cr := ""
	if strings.HasSuffix(line, "\r") {
		line, cr = line[:len(line)-1], "\r"
	}
	if sub := lineKV.FindStringSubmatch(line); sub != nil {
		key, value := strings.TrimSpace(sub[3]), sub[6]
		if strings.HasPrefix(strings.ToLower(key), "sops") {
			p.encrypted = true
			return line + cr, false
		}
		if force || isSecretKey(key) {
			head := sub[1] + sub[2] + sub[3] + sub[4] + sub[5]
			if blockIndicator.MatchString(strings.TrimSpace(value)) {
				return line + cr, true
			}
			if v, ok := p.value(value); ok {
				return head + v + cr, false
			}
			return line + cr, false
		}
	}
	if strings.Contains(line, "=") {
		line = embeddedAssign.ReplaceAllStringFunc(line, func(match string) string {
			sub := embeddedAssign.FindStringSubmatch(match)
			if !isSecretKey(sub[1]) || keepValue(p, sub[3]) {
				return match
			}
			p.masked++
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
			return sub[1] + sub[2] + Marker
		})
	}
	if strings.Contains(line, `"`) {
		line = embeddedJSON.ReplaceAllStringFunc(line, func(match string) string {
			sub := embeddedJSON.FindStringSubmatch(match)
			if !isSecretKey(sub[1]) || keepValue(p, sub[3]) {
				return match
			}
			p.masked++
			return `"` + sub[1] + `"` + sub[2] + `"` + Marker + `"`
		})
	}
	return line + cr, false
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
			return string(q) + Marker + string(q), true
		}
		if keepValue(p, t[1:end]) {
			return v, false
		}
		p.masked++
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

// secretWords are the key names whose values are secrets. Keys are compared
// lower-cased with every character other than a letter or digit removed, so
// "api_key", "API-Key" and "apiKey" are all "apikey".
var secretWords = []string{
	"password", "passwd", "passphrase", "secret", "token", "apikey",
	"privatekey", "credential", "creds", "accesskey", "signingkey",
	"encryptionkey", "masterkey", "connectionstring", "connstr", "dsn",
}

// secretExact are key names that are secrets only when they are the whole key.
var secretExact = []string{"pass", "pwd", "pw", "auth", "authorization", "htpasswd", "dbpass"}

// notSecretSuffixes end key names that name or point at a secret rather than
// hold it: secretName, secretKeyRef, passwordFile, tokenUrl, apiKeyId.
var notSecretSuffixes = []string{
	"name", "names", "ref", "refs", "file", "files", "path", "dir", "url", "uri",
	"endpoint", "id", "ids", "type", "enabled", "ttl", "length", "size", "policy",
	"version", "mode", "count", "expiry", "expiration", "expires", "header",
	"field", "selector", "provider", "format", "store", "source", "namespace",
}

// isSecretKey reports whether a value stored under key is a secret.
func isSecretKey(key string) bool {
	k := normalizeKey(key)
	if k == "" {
		return false
	}
	for _, w := range secretExact {
		if k == w || strings.HasSuffix(k, w) && len(k) > len(w) && w == "pass" {
			return true
		}
	}
	found := false
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	if strings.HasPrefix(k, "existing") {
		return false
	}
	for _, s := range notSecretSuffixes {
		if strings.HasSuffix(k, s) {
			return false
		}
	}
	return true
}

func normalizeKey(key string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

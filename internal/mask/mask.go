package mask

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
)

// Marker replaces every masked value. It is the same for every value so that
// neither the value nor its length can be inferred from the output.
const Marker = "<masked>"

// Result is one masked file or manifest stream.
type Result struct {
	// Content is the masked text, safe to show to a person or a model.
	Content []byte
	// Masked counts the values replaced by Marker.
	Masked int
	// Encrypted reports that the content holds ciphertext shown as it is
	// (SealedSecret spec.encryptedData, SOPS ENC[...] values or sops: metadata).
	Encrypted bool
	// Redactions are the values replaced, to be cut from the other texts
	// of the same request.
	Redactions Redactions
}

// Masker masks secrets in files and rendered manifests. It is safe for
// concurrent use; build one at start-up with New (or Lazy) and share it.
type Masker struct {
	*scanner
	// load builds the scanner of a lazy masker (scanner nil) on first use.
	load func() (*scanner, error)
}

// scanner is gitleaks' detector and a trie of its rules' keywords.
type scanner struct {
	detector *detect.Detector
	keywords *ahocorasick.Trie
}

// gitleaksDetector builds gitleaks' detector once per process:
// detect.NewDetectorDefaultConfig reads its rules through viper's global
// instance and gitleaks logs through the global logging.Logger, so both writes
// must happen exactly once, before any scan. After construction a Detector's
// DetectString only reads its rules (regexps, an Aho-Corasick trie, allowlists)
// and adds to an atomic byte counter, so one detector serves all goroutines.
var gitleaksScanner = sync.OnceValues(func() (*scanner, error) {
	logging.Logger = zerolog.Nop()
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		return nil, fmt.Errorf("mask: gitleaks default config: %w", err)
	}
	// No decoding passes: decoded findings append to shared rule tags, which
	// is not safe across goroutines.
	d.MaxDecodeDepth = 0
	kw := make([]string, 0, len(d.Config.Keywords))
	for k := range d.Config.Keywords {
		kw = append(kw, k)
	}
	return &scanner{detector: d, keywords: ahocorasick.NewTrieBuilder().AddStrings(kw).Build()}, nil
})

// New returns a Masker using gitleaks v8's default rule set. The detector is
// built once per process and shared by every Masker.
func New() (*Masker, error) {
	s, err := gitleaksScanner()
	if err != nil {
		return nil, err
	}
	return &Masker{scanner: s}, nil
}

// Lazy returns a Masker that builds gitleaks' detector on its first use,
// so an idle server does not hold it (its keyword trie alone is ~13 MiB).
// When the build fails, every masking fails closed: the content is the
// marker alone, and every judged value counts as masked.
func Lazy() *Masker { return &Masker{load: gitleaksScanner} }

// loaded is the masker with its scanner, or false when it cannot be built.
func (m *Masker) loaded() (*Masker, bool) {
	if m.scanner != nil {
		return m, true
	}
	s, err := m.load()
	if err != nil || s == nil {
		return nil, false
	}
	return &Masker{scanner: s}, true
}

// closed is what masking answers when the masker cannot be built.
func closed() Result { return Result{Content: []byte(Marker + "\n"), Masked: 1} }

// File masks a repository file. path chooses the format: YAML files are masked
// structurally document by document (a document that does not parse, and a
// template holding {{ }}, by the YAML-aware line scanner), JSON files
// structurally (by the scanner when they do not parse), and every other file
// by the scanner.
func (m *Masker) File(filePath string, content []byte) Result {
	m, ok := m.loaded()
	if !ok {
		return closed()
	}
	switch strings.ToLower(path.Ext(filePath)) {
	case ".yaml", ".yml":
		return m.mask(content, formatYAML)
	case ".json":
		return m.mask(content, formatJSON)
	default:
		return m.mask(content, formatText)
	}
}

// Manifests masks rendered multi-document YAML, such as a Helm or kustomize
// render of an app. A rendered stream is YAML whatever text it holds ({{ }}
// of an alerting rule included): it is masked structurally, document by
// document, and a document that does not parse is masked whole (its values
// replaced, its keys kept) without changing how the others are masked.
func (m *Masker) Manifests(yaml []byte) Result {
	m, ok := m.loaded()
	if !ok {
		return closed()
	}
	return m.mask(yaml, formatManifests)
}

type format int

const (
	formatText format = iota
	formatYAML
	formatJSON
	formatManifests
)

// mask runs one masking pass. A panic anywhere in parsing or emitting falls
// back to a document masked whole or by the scanner, and a panic there yields
// nothing but the marker: no input can make masking fail open.
func (m *Masker) mask(content []byte, f format) (res Result) {
	defer func() {
		if recover() != nil {
			res = Result{Content: []byte(Marker + "\n"), Masked: 1}
		}
	}()
	text := string(content)
	switch {
	case f == formatManifests:
		return m.maskStream(text, true)
	case f == formatYAML && !strings.Contains(text, "{{"):
		return m.maskStream(text, false)
	case f == formatJSON:
		if r, ok := m.maskStructured(text, true); ok {
			return r
		}
	}
	return m.maskLines(text)
}

// secrets runs gitleaks over each text and returns the distinct secrets found,
// longest first so that a secret containing another is replaced whole.
func (m *scanner) secrets(texts ...string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range texts {
		if t == "" {
			continue
		}
		for _, f := range m.detector.DetectString(m.keywordLines(t)) {
			if f.RuleID == "private-key" {
				continue // privateKeyBlock masks the body and keeps BEGIN and END
			}
			s := strings.Trim(f.Secret, "\n")
			if len(s) < minSecretLen || seen[s] || strings.Contains(Marker, s) {
				continue
			}
			seen[s] = true
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// keywordLines returns the lines of t that hold a keyword of some gitleaks
// rule. Every content rule needs its keyword in the scanned text, and all but
// the private-key rule (replaced by privateKeyBlock) match within one line, so
// scanning only these lines finds the same secrets several times faster:
// Kubernetes YAML is mostly lines without any.
func (s *scanner) keywordLines(t string) string {
	lower := make([]byte, len(t))
	for i := 0; i < len(t); i++ {
		c := t[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	var b strings.Builder
	next := 0 // lines before next are written or skipped
	s.keywords.Walk(lower, func(end, n, _ int64) bool {
		pos := int(end - n + 1)
		if pos < next {
			return true
		}
		start := strings.LastIndexByte(t[:pos], '\n') + 1
		stop := strings.IndexByte(t[pos:], '\n')
		if stop < 0 {
			stop = len(t)
		} else {
			stop += pos
		}
		b.WriteString(t[start:stop])
		b.WriteByte('\n')
		next = stop
		return true
	})
	return b.String()
}

// minSecretLen keeps gitleaks findings too short to be credentials from
// blanking ordinary text everywhere they occur.
const minSecretLen = 6

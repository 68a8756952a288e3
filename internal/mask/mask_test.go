package mask_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kukie/gitops-server/internal/mask"
)

// MustNew returns a Masker or fails the test.
func MustNew(tb testing.TB) *mask.Masker {
	tb.Helper()
	m, err := mask.New()
	if err != nil {
		tb.Fatalf("mask.New: %v", err)
	}
	return m
}

// planted returns the secret values planted in testdata.
func planted(tb testing.TB) []string {
	tb.Helper()
	b, err := os.ReadFile("testdata/planted-values.txt")
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Fields(string(b))
}

// fixtures returns every fixture file under testdata by relative path.
func fixtures(tb testing.TB) map[string][]byte {
	tb.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("testdata", p)
		switch rel {
		case "planted-values.txt", "encrypted-values.json":
			return nil
		}
		if strings.HasPrefix(rel, "fuzz"+string(filepath.Separator)) {
			return nil
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return files
}

func TestFixturesHideEveryPlantedValue(t *testing.T) {
	m := MustNew(t)
	secrets := planted(t)
	for name, content := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			results := map[string]mask.Result{"File": m.File(name, content)}
			if strings.HasSuffix(name, ".yaml") {
				results["Manifests"] = m.Manifests(content)
			}
			for how, r := range results {
				out := string(r.Content)
				for _, s := range secrets {
					if strings.Contains(out, s) {
						t.Errorf("%s: planted value %q survives in:\n%s", how, s, out)
					}
				}
				if strings.TrimSpace(out) == "" {
					t.Errorf("%s: empty output", how)
				}
			}
		})
	}
}

func TestFixturesMaskWhatTheyPlant(t *testing.T) {
	m := MustNew(t)
	files := fixtures(t)
	tests := []struct {
		file          string
		wantMasked    int // at least
		wantEncrypted bool
		wantVisible   []string
	}{
		{"secret.yaml", 4, false, []string{"username:", "password:", "api-token:", "ca.crt:", "# base64 of a planted value", "name: app-credentials"}},
		{"configmap.yaml", 5, false, []string{"LOG_LEVEL: debug", "server.port=8080", "db.username=shop", "FEATURE_X=true", `"region": "eu-west-1"`, "postgres://shop:"}},
		{"deployment.yaml", 2, false, []string{"name: DB_PASSWORD", "value: info", "secretName: app-credentials", "key: api-token", "replicas: 3"}},
		{"chart/values.yaml", 3, false, []string{"clientId: shop-web", "existingSecret: \"\"", "repository: ghcr.io/kukie/shop"}},
		{"chart/templates/secret.yaml", 1, false, []string{"{{ .Values.database.password | quote }}", "{{ .Values.apiKey }}", "admin-password:", "{{ .Values.replicaCount | quote }}"}},
		{"app.env", 5, false, []string{"APP_NAME=shop", "DB_HOST=localhost", "DB_PASSWORD=", "export GITHUB_TOKEN="}},
		{"id_rsa", 1, false, []string{"-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"}},
		{"aws-credentials.ini", 2, false, []string{"[default]", "region = eu-west-1"}},
		{"ci.yaml", 3, false, []string{"hint: see vault", "https://api.example.test/", "deployKey:"}},
		{"sealedsecret.yaml", 0, true, []string{"kind: SealedSecret"}},
		{"sops-secret.yaml", 0, true, []string{"version: 3.9.1", "-----BEGIN AGE ENCRYPTED FILE-----"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			content, ok := files[tt.file]
			if !ok {
				t.Fatalf("fixture %s missing", tt.file)
			}
			r := m.File(tt.file, content)
			out := string(r.Content)
			if r.Masked < tt.wantMasked {
				t.Errorf("Masked = %d, want at least %d:\n%s", r.Masked, tt.wantMasked, out)
			}
			if r.Encrypted != tt.wantEncrypted {
				t.Errorf("Encrypted = %v, want %v", r.Encrypted, tt.wantEncrypted)
			}
			for _, v := range tt.wantVisible {
				if !strings.Contains(out, v) {
					t.Errorf("%q not visible in:\n%s", v, out)
				}
			}
		})
	}
}

func TestEncryptedFormsUnchanged(t *testing.T) {
	m := MustNew(t)
	b, err := os.ReadFile("testdata/encrypted-values.json")
	if err != nil {
		t.Fatal(err)
	}
	var enc struct{ Encrypted []string }
	if err := json.Unmarshal(b, &enc); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, f := range []string{"sealedsecret.yaml", "sops-secret.yaml"} {
		content, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		r := m.File(f, content)
		if !r.Encrypted {
			t.Errorf("%s: Encrypted = false", f)
		}
		out.Write(r.Content)
		if r := m.Manifests(content); !r.Encrypted {
			t.Errorf("%s: Manifests Encrypted = false", f)
		}
	}
	for _, v := range enc.Encrypted {
		if !strings.Contains(out.String(), v) {
			t.Errorf("ciphertext %.40s... changed or missing in:\n%s", v, out.String())
		}
	}
}

func TestSecretDataIsOneMarkerPerValue(t *testing.T) {
	m := MustNew(t)
	in := `apiVersion: v1
kind: Secret
metadata:
  name: s
data:
  short: YQ==
  long: ` + strings.Repeat("QUJD", 200) + `
  empty: ""
stringData:
  b: plain-text-value
---
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Secret
    metadata:
      name: in-list
    data:
      k: dmFsdWU=
`
	r := m.Manifests([]byte(in))
	dec := yaml.NewDecoder(strings.NewReader(string(r.Content)))
	var first struct {
		Data       map[string]string
		StringData map[string]string `yaml:"stringData"`
	}
	if err := dec.Decode(&first); err != nil {
		t.Fatalf("masked output is not YAML: %v\n%s", err, r.Content)
	}
	want := map[string]string{"short": mask.Marker, "long": mask.Marker, "empty": mask.Marker}
	for k, v := range want {
		if first.Data[k] != v {
			t.Errorf("data[%s] = %q, want %q", k, first.Data[k], v)
		}
	}
	if len(first.Data) != len(want) || first.StringData["b"] != mask.Marker {
		t.Errorf("data = %v, stringData = %v", first.Data, first.StringData)
	}
	var list struct {
		Items []struct{ Data map[string]string }
	}
	if err := dec.Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Data["k"] != mask.Marker {
		t.Errorf("Secret in a List not masked: %+v", list)
	}
	if r.Masked != 5 {
		t.Errorf("Masked = %d, want 5", r.Masked)
	}
}

func TestRules(t *testing.T) {
	m := MustNew(t)
	tests := []struct {
		name    string
		path    string
		in      string
		hidden  []string
		visible []string
	}{
		{"KeyNamesYAML", "v.yaml",
			"password: hunter2hunter2\ndb_passwd: p4ss-word\napi-key: k3y-value-1\nAPIKey: k3y-value-2\nprivate_key: pk-value\ncredentials: cr3ds\nclientSecret: cs-value\nauthToken: tok-value\nsecretName: my-secret\nkeep: visible-value\n",
			[]string{"hunter2hunter2", "p4ss-word", "k3y-value-1", "k3y-value-2", "pk-value", "cr3ds", "cs-value", "tok-value"},
			[]string{"secretName: my-secret", "keep: visible-value"}},
		{"NestedUnderSecretKey", "v.yaml",
			"secrets:\n  STRIPE: nested-value-1\n  list:\n    - nested-value-2\n  name: visible-name\n",
			[]string{"nested-value-1", "nested-value-2"}, []string{"name: visible-name"}},
		{"AliasOfSecretValue", "v.yaml",
			"shared: &pw alias-secret-value\npassword: *pw\n",
			[]string{"alias-secret-value"}, nil},
		{"ConnectionString", "v.yaml",
			"url: postgres://user:conn-pass-value@db:5432/app\ndsn: mysql://root:dsn-pass@tcp(db)/x\njdbc: jdbc:sqlserver://h;user=u;password=jdbc-pass-value;db=x\nquery: https://h/p?user=u&password=query-pass-value&x=1\n",
			[]string{"conn-pass-value", "dsn-pass", "jdbc-pass-value", "query-pass-value"}, []string{"postgres://user:", "@db:5432/app"}},
		{"EnvNameValue", "d.yaml",
			"env:\n  - name: GITHUB_TOKEN\n    value: env-token-value\n  - name: HOME\n    value: /home/app\n",
			[]string{"env-token-value"}, []string{"value: /home/app"}},
		{"PropertiesFile", "application.properties",
			"spring.datasource.password=props-pass-value\nspring.datasource.username=app\napp.token : colon-token-value\n",
			[]string{"props-pass-value", "colon-token-value"}, []string{"spring.datasource.username=app"}},
		{"JSONFile", "config.json",
			`{"name": "x", "auth": {"password": "json-pass-value", "nested": {"api_key": "json-key-value"}}, "count": 3, "ok": true}`,
			[]string{"json-pass-value", "json-key-value"}, []string{`"name": "x"`, `"count": 3`, `"ok": true`}},
		{"JSONInsideAValue", "cm.yaml",
			"metadata:\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"data\":{\"k\":\"bGFzdC1hcHBsaWVk\"}}'\n",
			[]string{"bGFzdC1hcHBsaWVk"}, []string{`"kind":"Secret"`}},
		{"SecretInComment", "c.yaml",
			"a: b # token: comment-token-value\n# password = comment-pass-value\n",
			[]string{"comment-token-value", "comment-pass-value"}, []string{"a: b"}},
		{"BlockScalarUnderSecretKeyInTemplate", "templates/t.yaml",
			"{{- if .Values.x }}\nprivateKey: |\n  block-line-one\n  block-line-two\nother: {{ .Values.y }}\n{{- end }}\n",
			[]string{"block-line-one", "block-line-two"}, []string{"other: {{ .Values.y }}"}},
		{"TemplateSecretData", "templates/s.yaml",
			"kind: Secret\nmetadata:\n  name: {{ .Release.Name }}\nstringData:\n  plain: tmpl-data-value\n  ref: {{ .Values.pw | b64enc }}\n{{- range $k, $v := .Values.extra }}\n  {{ $k }}: {{ $v }}\n{{- end }}\n  after: tmpl-after-value\n",
			[]string{"tmpl-data-value", "tmpl-after-value"}, []string{"ref: {{ .Values.pw | b64enc }}", "name: {{ .Release.Name }}"}},
		{"InvalidYAMLFallsBackToLines", "broken.yaml",
			"a: [unclosed\npassword: broken-pass-value\n",
			[]string{"broken-pass-value"}, []string{"a: [unclosed"}},
		{"PrivateKeyInDoubleQuotedJSONString", "k.json",
			`{"key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n"}`,
			[]string{"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"}, []string{"-----BEGIN PRIVATE KEY-----"}},
		{"UnterminatedPrivateKey", "notes.txt",
			"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n",
			[]string{"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz"}, nil},
		{"SOPSDotenv", "secrets.env",
			"DB_PASSWORD=ENC[AES256_GCM,data:Zm9vYmFy,iv:aXZpdml2aXZpdg==,tag:dGFndGFn,type:str]\nsops_version=3.9.1\n",
			nil, []string{"ENC[AES256_GCM,data:Zm9vYmFy,iv:aXZpdml2aXZpdg==,tag:dGFndGFn,type:str]"}},
		{"ValuesThatStay", "v.yaml",
			"password: \"\"\ntoken: {{ .Values.token }}\nsecret: ${SECRET}\nenableToken: true\n",
			nil, []string{`password: ""`, "${SECRET}", "enableToken: true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := m.File(tt.path, []byte(tt.in))
			out := string(r.Content)
			for _, h := range tt.hidden {
				if strings.Contains(out, h) {
					t.Errorf("%q not masked:\n%s", h, out)
				}
			}
			for _, v := range tt.visible {
				if !strings.Contains(out, v) {
					t.Errorf("%q not visible:\n%s", v, out)
				}
			}
		})
	}
}

// TestGitleaksFindsTokensWhateverTheKey checks that tokens under harmless
// keys are masked by gitleaks' rules, not only by key names.
func TestGitleaksFindsTokensWhateverTheKey(t *testing.T) {
	m := MustNew(t)
	tokens := map[string]string{}
	for _, s := range planted(t) {
		switch {
		case strings.HasPrefix(s, "ghp_"):
			tokens["github"] = s
		case strings.HasPrefix(s, "AKIA"):
			tokens["aws"] = s
		case strings.HasPrefix(s, "eyJ"):
			tokens["jwt"] = s
		}
	}
	if len(tokens) != 3 {
		t.Fatalf("planted tokens missing: %v", tokens)
	}
	for name, tok := range tokens {
		for _, path := range []string{"notes.yaml", "notes.txt"} {
			r := m.File(path, []byte("note: "+tok+"\nother: visible\n"))
			if strings.Contains(string(r.Content), tok) || r.Masked != 1 {
				t.Errorf("%s in %s: Masked = %d, output:\n%s", name, path, r.Masked, r.Content)
			}
		}
	}
}

func TestNoPanicOnOddInput(t *testing.T) {
	m := MustNew(t)
	inputs := []string{
		"", "\x00\xff\xfe", "---\n---\n", "&a [*a]", "a: &a\n  b: *a\n", "{{", "key: |\n", ":\n=\n",
		"- - - - - -", "? [a]\n: b\n", strings.Repeat("[", 10000), strings.Repeat("a:\n ", 3000),
		"-----BEGIN PRIVATE KEY-----", "!!binary password: x", "\"\\", "a: !!int password",
	}
	for _, in := range inputs {
		for _, p := range []string{"x.yaml", "x.json", "x.env", "x"} {
			_ = m.File(p, []byte(in))
		}
		_ = m.Manifests([]byte(in))
	}
}

func TestConcurrentUse(t *testing.T) {
	m := MustNew(t)
	files := fixtures(t)
	want := map[string]string{}
	for name, c := range files {
		want[name] = string(m.File(name, c).Content)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m2 := MustNew(t)
			for name, c := range files {
				if got := string(m2.File(name, c).Content); got != want[name] {
					errs <- name
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for name := range errs {
		t.Errorf("%s: concurrent result differs", name)
	}
}

package mask_test

import (
	"encoding/base64"
	"strings"
	"testing"
)

// promRule is a rendered PrometheusRule: its {{ $labels.instance }} is text
// for Alertmanager, and it must not change how the rest of a stream is masked.
const promRule = `apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: web-alerts
spec:
  groups:
    - name: web
      rules:
        - alert: InstanceDown
          annotations:
            description: '{{ $labels.instance }} has been down for 5 minutes'
`

// bypassCase is a row of TestMaskingCannotBeBypassed.
type bypassCase struct {
	name    string
	path    string // "" masks the input as a rendered stream (Manifests)
	in      string
	hidden  []string
	visible []string
}

// TestMaskingCannotBeBypassed holds every shape issue 19 lists as leaking,
// in rendered streams (Manifests) and in template files (File), and the
// shapes that must keep their values. hidden values must appear nowhere in
// the output; visible text (keys, names, kinds, comments) must remain.
func TestMaskingCannotBeBypassed(t *testing.T) {
	m := MustNew(t)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := append([]bypassCase{
		// Rendered streams: a {{ anywhere must not switch to line mode.
		{"StreamFoldedStringDataValue", "", promRule + `---
apiVersion: v1
kind: Secret
metadata:
  name: db # the database
stringData:
  password: Leak01FoldedHeadQx
    Leak01FoldedTailQx
`, []string{"Leak01FoldedHeadQx", "Leak01FoldedTailQx"},
			[]string{"kind: Secret", "name: db", "# the database", "password:", "{{ $labels.instance }}", "kind: PrometheusRule"}},
		{"StreamValueOnNextLine", "", promRule + `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  password:
    Leak02NextLineQx
  mode: visible-mode
`, []string{"Leak02NextLineQx"}, []string{"password:", "mode: visible-mode", "name: app"}},
		{"StreamFlowMappingInSecretData", "", promRule + `---
apiVersion: v1
kind: Secret
metadata:
  name: flow
data: {conn: Leak03FlowValueQx, other: Leak03FlowOtherQx}
`, []string{"Leak03FlowValueQx", "Leak03FlowOtherQx"}, []string{"kind: Secret", "name: flow", "conn"}},
		{"StreamMultiLineQuotedScalar", "", promRule + `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: quoted
data:
  db_password: "Leak04QuotedHeadQx
    Leak04QuotedTailQx"
`, []string{"Leak04QuotedHeadQx", "Leak04QuotedTailQx"}, []string{"db_password", "name: quoted"}},
		{"StreamListItemSecret", "", promRule + `---
apiVersion: v1
kind: List
items:
- kind: Secret
  apiVersion: v1
  metadata:
    name: in-list
  stringData:
    conn: Leak05ListItemQx
    other: >
      Leak05ListFoldedQx
`, []string{"Leak05ListItemQx", "Leak05ListFoldedQx"}, []string{"kind: Secret", "name: in-list", "conn:", "other:"}},
		{"StreamAnchorOutsideData", "", `apiVersion: v1
kind: Secret
metadata:
  name: anchored
  labels: &d {conn: Leak06AnchorValueQx}
data: *d
`, []string{"Leak06AnchorValueQx"}, []string{"kind: Secret", "name: anchored"}},
		{"StreamAnchorOfSecretKeyValue", "", `kind: ConfigMap
metadata:
  name: anchors
data:
  shared: &s Leak07AnchorScalarQx
  nested: &n [*s]
  token: *n
`, []string{"Leak07AnchorScalarQx"}, []string{"name: anchors"}},
		{"StreamBrokenDocumentDoesNotSpreadFallback", "", `apiVersion: v1
kind: ConfigMap
metadata:
  name: broken
data:
  a: [unclosed Leak08BrokenValueQx
---
apiVersion: v1
kind: Secret
metadata:
  name: after-broken
stringData:
  password: Leak08FoldedHeadQx
    Leak08FoldedTailQx
`, []string{"Leak08BrokenValueQx", "Leak08FoldedHeadQx", "Leak08FoldedTailQx"},
			[]string{"name: after-broken", "kind: Secret", "metadata:", "data:"}},
		{"StreamSeparatorInsideBlockScalarIsContent", "", `apiVersion: v1
kind: Secret
metadata:
  name: block
stringData:
  notes: |
    header
    ---
    password: Leak09AfterDashesQx
`, []string{"Leak09AfterDashesQx"}, []string{"name: block", "notes:"}},
		{"StreamCompoundKeyNames", "", `apiVersion: v1
kind: ConfigMap
metadata:
  name: keys
data:
  apiKey: Leak10ApiKeyQx
  sshKey: Leak10SshKeyQx
  clientKey: Leak10ClientKeyQx
  signing_key: Leak10SigningQx
  salt: Leak10SaltValueQx
  hmacKey: Leak10HmacKeyQx
  cookieSigning: Leak10CookieSignQx
  tls.key: Leak10TlsKeyBodyQx
`, []string{"Leak10ApiKeyQx", "Leak10SshKeyQx", "Leak10ClientKeyQx", "Leak10SigningQx", "Leak10SaltValueQx",
			"Leak10HmacKeyQx", "Leak10CookieSignQx", "Leak10TlsKeyBodyQx"},
			[]string{"apiKey:", "sshKey:", "clientKey:", "signing_key:", "salt:", "hmacKey:", "tls.key:"}},
		{"StreamBinaryDataAndBase64ConfigMapValues", "", `apiVersion: v1
kind: ConfigMap
metadata:
  name: encoded
binaryData:
  app.env: ` + b64("APP=web\nDB_PASSWORD=Leak11BinaryPwQx\n") + `
data:
  settings: ` + b64("password: Leak11DataPwQx\n") + `
  plain: ` + b64("hello world, nothing here") + `
`, []string{"Leak11BinaryPwQx", "Leak11DataPwQx", b64("APP=web\nDB_PASSWORD=Leak11BinaryPwQx\n"), b64("password: Leak11DataPwQx\n")},
			[]string{"app.env:", "settings:", b64("hello world, nothing here")}},

		// Template files: {{ }} anywhere; masked by the YAML-aware scanner.
		{"TemplateFoldedStringDataValue", "templates/secret.yaml", `{{- if .Values.enabled }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }} # release
stringData:
  password: Leak21FoldedHeadQx
    Leak21FoldedTailQx
  ref: {{ .Values.pw | b64enc }}
{{- end }}
`, []string{"Leak21FoldedHeadQx", "Leak21FoldedTailQx"},
			[]string{"kind: Secret", "name: {{ .Release.Name }} # release", "password:", "ref: {{ .Values.pw | b64enc }}", "{{- end }}"}},
		{"TemplateValueOnNextLine", "templates/cm.yaml", `kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  password:
    Leak22NextLineQx
  mode: visible-mode
`, []string{"Leak22NextLineQx"}, []string{"password:", "mode: visible-mode"}},
		{"TemplateSequenceAtKeyIndent", "templates/cm.yaml", `kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
passwords:
- Leak23SeqItemOneQx
- Leak23SeqItemTwoQx
other: visible-other
`, []string{"Leak23SeqItemOneQx", "Leak23SeqItemTwoQx"}, []string{"passwords:", "other: visible-other"}},
		{"TemplateFlowMappingInSecretData", "templates/s.yaml", `kind: Secret
metadata:
  name: {{ .Release.Name }}
data: {conn: Leak24FlowValueQx,
  other: Leak24FlowOtherQx}
type: Opaque
`, []string{"Leak24FlowValueQx", "Leak24FlowOtherQx"}, []string{"kind: Secret", "type: Opaque"}},
		{"TemplateMultiLineQuotedScalar", "templates/cm.yaml", `kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  db_password: 'Leak25QuotedHeadQx
Leak25QuotedTailQx'
  mode: visible-mode
`, []string{"Leak25QuotedHeadQx", "Leak25QuotedTailQx"}, []string{"db_password:", "mode: visible-mode"}},
		{"TemplateBlockScalars", "templates/cm.yaml", `kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  client_secret: >-
    Leak26FoldedBlockQx
    Leak26FoldedBlock2Qx
  privateKey: |2
     Leak26LiteralBlockQx
  mode: visible-mode
`, []string{"Leak26FoldedBlockQx", "Leak26FoldedBlock2Qx", "Leak26LiteralBlockQx"}, []string{"client_secret:", "privateKey:", "mode: visible-mode"}},
		{"TemplateListItemSecret", "templates/list.yaml", `kind: List
items:
{{- range .Values.items }}
- kind: Secret
  metadata:
    name: {{ .name }}
  stringData:
    conn: Leak27ListItemQx
{{- end }}
`, []string{"Leak27ListItemQx"}, []string{"kind: Secret", "conn:", "{{- range .Values.items }}"}},
		{"TemplateAnchorOutsideData", "templates/s.yaml", `kind: Secret
metadata:
  name: {{ .Release.Name }}
  labels: &d {conn: Leak28AnchorValueQx}
data: *d
`, []string{"Leak28AnchorValueQx"}, []string{"kind: Secret", "labels:"}},
		{"TemplateDefaultLiteralUnderSecretKey", "templates/cm.yaml", `kind: ConfigMap
data:
  password: {{ .Values.pw | default "Leak29DefaultQx" }}
`, []string{"Leak29DefaultQx"}, []string{"password:"}},
		{"ValuesFileWithTemplateText", "values.yaml", `alertText: "{{ $labels.instance }} down"
auth:
  password: Leak30ValuesHeadQx
    Leak30ValuesTailQx
`, []string{"Leak30ValuesHeadQx", "Leak30ValuesTailQx"}, []string{"alertText:", "{{ $labels.instance }} down", "password:"}},

		// What must keep its value.
		{"PairKeysThatStay", "", `spec:
  tolerations:
  - key: dedicated
    operator: Equal
    value: gpu-visible
  env:
  - name: LOG_LEVEL
    value: debug-visible
  - name: DB_PASSWORD
    valueFrom:
      secretKeyRef: {name: db, key: password}
`, nil, []string{"value: gpu-visible", "value: debug-visible", "key: password"}},
		{"StreamKeysThatStay", "", promRule + `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      tolerations:
        - key: node-role.kubernetes.io/control-plane
          operator: Exists
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector:
                matchExpressions:
                  - key: app.kubernetes.io/name
                    operator: In
                    values: [web]
      containers:
        - name: web
          env:
            - name: CONFIG
              valueFrom:
                configMapKeyRef:
                  name: web-config
                  key: config.json
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  keyId: visible-key-id
  publicKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIvisiblePublicKey
  keyRef: visible-key-ref
  LOG_LEVEL: debug
  greeting: hello-visible-world
`, nil, []string{"key: node-role.kubernetes.io/control-plane", "topologyKey: kubernetes.io/hostname", "key: app.kubernetes.io/name",
			"key: config.json", "keyId: visible-key-id", "AAAAC3NzaC1lZDI1NTE5AAAAIvisiblePublicKey", "keyRef: visible-key-ref",
			"LOG_LEVEL: debug", "greeting: hello-visible-world", "'{{ $labels.instance }} has been down for 5 minutes'"}},
		{"TemplateKeysThatStay", "templates/deploy.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  tolerations:
    - key: dedicated
      operator: Equal
  env:
    - name: CONFIG
      valueFrom:
        configMapKeyRef:
          name: {{ .Release.Name }}-config
          key: config.json
  keyId: visible-key-id
  publicKey: visible-public-key
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  LOG_LEVEL: debug
  greeting: hello-visible-world
`, nil, []string{"key: dedicated", "key: config.json", "keyId: visible-key-id", "publicKey: visible-public-key",
			"LOG_LEVEL: debug", "greeting: hello-visible-world"}},
	}, reviewBypassCases...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out string
			if tt.path == "" {
				out = string(m.Manifests([]byte(tt.in)).Content)
			} else {
				out = string(m.File(tt.path, []byte(tt.in)).Content)
			}
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

package mask_test

import (
	"fmt"
	"strings"
)

// reviewBypassCases are the shapes the security review (trial 35925c4)
// found leaking, and the fuzzer after it, each failing before its fix, with
// the nearby shapes that must keep masking or stay visible (...Stay rows).
// They run in TestMaskingCannotBeBypassed.
var reviewBypassCases = []bypassCase{
	// Security review, finding 1: a password starting with "$" is not
	// a reference; ${VAR} and $(VAR) are.
	{"StreamDollarPassword", "", "db:\n  password: $Leak40DollarStreamQx\n", []string{"Leak40DollarStreamQx"}, []string{"password:"}},
	{"FileDollarPassword", "values.yaml", "db:\n  password: $Leak40DollarFileQx\n", []string{"Leak40DollarFileQx"}, []string{"password:"}},
	{"TemplateDollarPassword", "templates/x.yaml", "{{/* chart */}}\ndb:\n  password: $Leak40DollarTplQx\n", []string{"Leak40DollarTplQx"}, []string{"password:"}},
	{"EnvFileDollarPassword", "app.env", "DB_PASSWORD=$Leak40DollarEnvQx\nHOME=/home/app\n", []string{"Leak40DollarEnvQx"}, []string{"HOME=/home/app"}},
	{"StreamDollarEnvValue", "", `apiVersion: v1
kind: Pod
spec:
  containers:
  - name: a
    env:
    - name: DB_PASSWORD
      value: $Abc123Leak41Qx
`, []string{"Abc123Leak41Qx"}, []string{"name: DB_PASSWORD"}},
	{"StreamAllCapsDollarPassword", "", "password: $WELCOME2024LEAK42\n", []string{"WELCOME2024LEAK42"}, []string{"password:"}},
	{"DollarReferencesThatStay", "", `env:
- name: DB_PASSWORD
  value: $(DB_PASSWORD_FROM_SECRET)
password: ${DB_PASSWORD}
`, nil, []string{"$(DB_PASSWORD_FROM_SECRET)", "${DB_PASSWORD}"}},

	// Finding 2: env pairs in templates, flow style and value first.
	{"TemplateEnvFlowSequence", "templates/deploy.yaml", `{{/* chart */}}
spec:
  containers:
  - name: app
    env: [{name: DB_PASSWORD, value: Leak43EnvFlowSeqQx}, {name: HOME, value: {{ .Values.home | quote }}}]
    image: nginx
`, []string{"Leak43EnvFlowSeqQx"}, []string{"DB_PASSWORD", "{{ .Values.home | quote }}", "image: nginx"}},
	{"TemplateEnvFlowItem", "templates/deploy.yaml", `{{/* chart */}}
    env:
    - {name: DB_PASSWORD, value: Leak44EnvFlowItemQx}
    - {name: API_TOKEN, value: {{ .Values.tok | default "Leak44DefaultQx" }}}
    - {name: REF_TOKEN, value: {{ .Values.tok }}}
    - {name: HOME, value: /home/visible}
`, []string{"Leak44EnvFlowItemQx", "Leak44DefaultQx"}, []string{"DB_PASSWORD", "- {name: REF_TOKEN, value: {{ .Values.tok }}}", "- {name: HOME, value: /home/visible}"}},
	{"TemplateEnvValueBeforeName", "templates/deploy.yaml", `{{/* chart */}}
    env:
    - value: Leak45ValueFirstQx
      name: DB_PASSWORD
    - value: visible-home
      name: HOME
`, []string{"Leak45ValueFirstQx"}, []string{"name: DB_PASSWORD", "value: visible-home"}},
	{"StreamEnvFlowSequence", "", promRule + "---\nspec:\n  env: [{name: DB_PASSWORD, value: Leak46StreamFlowQx}]\n",
		[]string{"Leak46StreamFlowQx"}, []string{"DB_PASSWORD"}},

	// Finding 3: key/value (and variable/default) pairs, like name/value.
	{"StreamKeyValuePair", "", "vars:\n- key: db_password\n  value: Leak47KeyValueStreamQx\n- key: region\n  value: visible-region\n",
		[]string{"Leak47KeyValueStreamQx"}, []string{"key: db_password", "value: visible-region"}},
	{"FileKeyValuePair", "values.yaml", "vars:\n- key: db_password\n  value: Leak47KeyValueFileQx\n",
		[]string{"Leak47KeyValueFileQx"}, []string{"key: db_password"}},
	{"TemplateKeyValuePair", "templates/x.yaml", "{{/* chart */}}\nvars:\n- key: db_password\n  value: Leak47KeyValueTplQx\n- key: region\n  value: visible-region\n",
		[]string{"Leak47KeyValueTplQx"}, []string{"key: db_password", "value: visible-region"}},
	{"TemplateTagsFlow", "templates/x.yaml", "{{/* chart */}}\ntags: [{Key: api_token, Value: Leak48TagFlowQx}]\n",
		[]string{"Leak48TagFlowQx"}, []string{"api_token"}},
	{"StreamVariableDefault", "", "variables:\n- variable: admin_password\n  default: Leak49DefaultQx\n- Name: ParameterToken\n  Value: Leak49ValueQx\n",
		[]string{"Leak49DefaultQx", "Leak49ValueQx"}, []string{"variable: admin_password"}},

	{"TemplateEnvFlowUnparsable", "templates/deploy.yaml", "{{/* chart */}}\n    env: [{name: DB_PASSWORD, value: Leak46UnparsableQx, {{ if .x }}extra: y{{ end }} : }]\n",
		[]string{"Leak46UnparsableQx"}, []string{"env:"}},
	{"StreamMergedNameKey", "", "base: &e {name: DB_PASSWORD}\nenv:\n- <<: *e\n  value: Leak56MergedNameQx\n",
		[]string{"Leak56MergedNameQx"}, []string{"value:"}},

	// Finding 4: kind: Secret through a merge key or an alias.
	{"FileMergeKeySecret", "values.yaml", "base: &secret {apiVersion: v1, kind: Secret}\nitem:\n  <<: *secret\n  metadata: {name: db}\n  stringData:\n    url: Leak50MergeFileQx\n",
		[]string{"Leak50MergeFileQx"}, []string{"url:"}},
	{"StreamMergeKeySecret", "", "base: &secret {apiVersion: v1, kind: Secret}\nitem:\n  <<: [*secret]\n  stringData:\n    url: Leak50MergeStreamQx\n",
		[]string{"Leak50MergeStreamQx"}, []string{"url:"}},
	{"StreamAliasedKind", "", "k: &k Secret\nitems:\n- kind: *k\n  stringData:\n    url: Leak51AliasKindQx\n",
		[]string{"Leak51AliasKindQx"}, []string{"url:"}},
	{"TemplateAliasedKind", "templates/x.yaml", "{{/* chart */}}\nk: &k Secret\nitems:\n- kind: *k\n  stringData:\n    url: Leak51AliasKindTplQx\n",
		[]string{"Leak51AliasKindTplQx"}, []string{"url:"}},
	{"MergeKeyConfigMapStays", "", "cm:\n  <<: {kind: ConfigMap}\n  data:\n    greeting: visible-greeting\n",
		nil, []string{"greeting: visible-greeting"}},

	// Finding 6: a template alias chain of any depth.
	{"TemplateAliasChainDeeperThanEight", "templates/x.yaml", aliasChain("Leak52AliasChainQx", 12), []string{"Leak52AliasChainQx"}, []string{"password:"}},

	// Finding 7: the value decides, not its tag.
	{"FileTaggedSecretValue", "values.yaml", "password: !!bool Leak53TaggedBoolQx\ntoken: !!null Leak53TaggedNullQx\n",
		[]string{"Leak53TaggedBoolQx", "Leak53TaggedNullQx"}, []string{"password:", "token:"}},
	{"StreamTaggedSecretValue", "", "password: !!bool Leak53StreamBoolQx\ntoken: !!null Leak53StreamNullQx\nenabled: !!bool true\n",
		[]string{"Leak53StreamBoolQx", "Leak53StreamNullQx"}, []string{"password:", "token:", "true"}},

	{"TemplateTaggedSecretValue", "templates/x.yaml", "{{/* chart */}}\npassword: !!bool Leak53TplBoolQx\nenabled: !!bool true\n",
		[]string{"Leak53TplBoolQx"}, []string{"password:", "enabled: !!bool true"}},

	// Finding 8: a complex key under a secret is content.
	{"StreamComplexKeyUnderSecret", "", "apiVersion: v1\nkind: ConfigMap\ndata:\n  password: {{ .Values.pw | default \"Leak54ComplexKeyQx\" }}\n  greeting: visible-greeting\n",
		[]string{"Leak54ComplexKeyQx"}, []string{"password:", "greeting: visible-greeting"}},

	// Found by fuzzing: a quoted secret folded into a longer scalar.
	{"StreamQuotedSecretFoldedIntoScalar", "", "a: '! db_password: \"Leak55QuotedHeadQx\n  Leak55QuotedTailQx\" '\n",
		[]string{"Leak55QuotedHeadQx", "Leak55QuotedTailQx"}, []string{"db_password"}},
}

// aliasChain returns a template whose secret key takes, through depth
// anchors each holding an alias of the one before, the value of the first.
func aliasChain(secret string, depth int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{{/* chart */}}\nk0: &a0 %s\n", secret)
	for i := 1; i <= depth; i++ {
		fmt.Fprintf(&b, "k%d: &a%d [*a%d]\n", i, i, i-1)
	}
	fmt.Fprintf(&b, "password: *a%d\n", depth)
	return b.String()
}

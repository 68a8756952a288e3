// Package mask hides secret values in repository files and rendered manifests
// before anything leaves the server (issue 11, "Secret masking").
//
// A Masker combines three sources of judgement:
//   - Kubernetes Secrets: every data/stringData value becomes the one fixed
//     Marker, whatever its length, so neither the value nor its size leaks;
//     the keys stay visible.
//   - Key names: a value whose key looks secret (password, secret, token, api
//     key, private key, credentials, client secret, connection strings, ...),
//     or whose sibling naming key names one (env name/value, key/value tags
//     and variables, variable/default), is replaced by Marker. Only ${VAR},
//     $(VAR) and template actions stay as references; a bare $word may be a
//     password.
//   - Value shapes: gitleaks v8's default rule set (cloud keys, Git host
//     tokens, JWTs, generic high-entropy assignments) plus private-key blocks
//     and passwords inside URLs, wherever they appear — in values, keys,
//     comments, and nested formats held in values (properties, env, YAML-ish
//     lines and JSON inside block scalars).
//
// Already-encrypted forms — a SealedSecret's spec.encryptedData, SOPS ENC[...]
// values and the sops: metadata — are left exactly as they are and reported
// through Result.Encrypted.
//
// YAML and JSON are masked through go.yaml.in/yaml/v3's node tree, which
// keeps comments and key order (YAML is re-indented to two spaces, JSON is
// pretty-printed), YAML document by document: a rendered stream always (a
// document that does not parse is masked whole, values replaced and keys
// kept), a file unless it holds {{ }}. An alias under a secret masks its
// anchor's value. Helm templates, env and properties files, scripts and YAML
// documents of files that do not parse go through a scanner that follows
// YAML's block structure (scan.go), so a secret value is masked whole
// whatever lines it spans. Masking never panics; when in doubt it masks
// more, not less.
//
// Result.Redactions lists the values a run replaced; a request merges those
// of everything it masked and cuts them from the other texts it returns,
// such as a render error quoting a value, through a Redactor compiled once
// per set (an Aho-Corasick automaton of every value's forms, automaton.go).
package mask

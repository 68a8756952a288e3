package mask

import "strings"

// Key names are compared lower-cased with every character other than a
// letter or digit removed, so "api_key", "API-Key", "api.key" and "apiKey"
// are all "apikey".

// secretWords are the families of key names whose values are secrets,
// wherever they occur in the key.
var secretWords = []string{
	"passw", "passphrase", "secret", "token", "salt", "hmac", "signing",
	"credential", "creds", "private", "connectionstring", "connstr", "dsn",
	"certificate",
}

// secretExact are key names that are secrets only when they are the whole key.
var secretExact = []string{"pass", "pwd", "pw", "auth", "authorization", "htpasswd", "dbpass"}

// secretBodySuffixes end key names that hold a certificate or key body:
// "tls.crt", "server.pem", "client.p12".
var secretBodySuffixes = []string{"crt", "cert", "pem", "p12", "pfx", "jks", "keystore"}

// notSecretKeyCompounds end key names that end in "key" without holding
// one: a public key, or a key in the sense of a field or label name.
var notSecretKeyCompounds = []string{
	"publickey", "pubkey", "topologykey", "labelkey", "sortkey", "partitionkey",
	"primarykey", "hashkey", "cachekey", "routingkey", "foreignkey", "idempotencykey",
	"groupkey", "objectkey",
}

// notSecretSuffixes end key names that name or point at a secret rather than
// hold it: secretName, secretKeyRef, passwordFile, tokenUrl, apiKeyId.
var notSecretSuffixes = []string{
	"name", "names", "ref", "refs", "file", "files", "path", "dir", "url", "uri",
	"endpoint", "id", "ids", "type", "enabled", "ttl", "length", "size", "policy",
	"version", "mode", "count", "expiry", "expiration", "expires", "header",
	"field", "selector", "provider", "format", "store", "source", "namespace",
	"algorithm", "arn", "issuer", "audience",
}

// isSecretKey reports whether a value stored under key is a secret: the
// usual families (password, token, secret, salt, hmac, signing, credential,
// private, connection strings), certificate and key bodies, and "key" as the
// end of a compound (apiKey, sshKey, clientKey, signing_key, tls.key) — never
// a bare "key", which tolerations, matchExpressions and configMapKeyRef use,
// nor a name or reference to a secret (keyId, keyRef, secretName, tokenUrl).
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
	if strings.HasPrefix(k, "existing") {
		return false
	}
	for _, s := range secretBodySuffixes {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	for _, s := range notSecretSuffixes {
		if strings.HasSuffix(k, s) {
			return false
		}
	}
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return compoundKey(k, "key") || compoundKey(k, "keys")
}

// compoundKey reports a normalized key ending in suffix after something
// else (apikey, sshkey, tlskey), other than a known not-secret compound.
func compoundKey(k, suffix string) bool {
	if len(k) <= len(suffix) || !strings.HasSuffix(k, suffix) {
		return false
	}
	for _, c := range notSecretKeyCompounds {
		if strings.HasSuffix(k, c) || strings.HasSuffix(k, c+"s") {
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

// namesSecret reports whether a key under a secret-looking key only names or
// locates a secret (secretName, key, path, optional) rather than holding it.
func namesSecret(key string) bool {
	k := normalizeKey(key)
	switch k {
	case "key", "kind", "apiversion", "namespace", "optional", "items":
		return true
	}
	for _, s := range notSecretSuffixes {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	return false
}

// pairNameKeys name what a sibling value key holds: env entries
// (name/value), tags and Terraform, Crossplane or Argo variables
// (key/value, variable/default), CloudFormation parameters
// (ParameterKey/ParameterValue). Normalized.
var pairNameKeys = map[string]bool{
	"name": true, "key": true, "parameter": true, "variable": true, "parameterkey": true, "parametername": true,
}

// pairValueKeys hold the value a sibling naming key names. Normalized.
var pairValueKeys = map[string]bool{"value": true, "default": true, "parametervalue": true}

// namesSecretValue reports a naming key (pairNameKeys) whose value is a
// secret-looking name: its sibling value keys hold a secret. This is the one
// pair rule, used by the YAML walk and the scanner alike.
func namesSecretValue(key, value string) bool {
	return pairNameKeys[normalizeKey(key)] && isSecretKey(value)
}

// isPairValue reports a key holding the value its sibling naming key names.
func isPairValue(key string) bool { return pairValueKeys[normalizeKey(key)] }

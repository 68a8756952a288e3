package mask

import "testing"

func TestIsSecretKey(t *testing.T) {
	secret := []string{
		// The usual families.
		"password", "db_password", "DB_PASSWORD", "passwd", "adminPass", "passphrase", "pwd",
		"secret", "client_secret", "clientSecret", "secretKey", "token", "accessToken", "authToken",
		"refresh-token", "salt", "passwordSalt", "hmac", "hmacKey", "signing", "signingKey",
		"signing_key", "cookieSigning", "credentials", "credential", "creds", "privateKey",
		"private_key", "private", "connectionString", "connstr", "dsn", "auth", "authorization",
		"htpasswd", "certificate", "keystore",
		// "key" as the end of a compound.
		"apiKey", "api_key", "API-KEY", "sshKey", "clientKey", "encryptionKey", "masterKey",
		"accessKey", "tls.key", "ca.key", "apiKeys",
		// Certificate and key bodies.
		"tls.crt", "server.pem", "client.p12", "keystore.jks", "store.pfx", "clientCert",
	}
	notSecret := []string{
		"key", "Key", "keys", "keyId", "key_id", "publicKey", "public_key", "pubkey", "keyRef",
		"topologyKey", "labelKey", "matchLabelKeys", "sortKey", "partitionKey", "primaryKey",
		"cacheKey", "routingKey",
		// Today's not-secret suffixes: names and references to secrets.
		"secretName", "secretKeyRef", "passwordFile", "tokenUrl", "tokenURL", "apiKeyId",
		"existingSecret", "secretNamespace", "tokenTTL", "passwordLength", "secretType",
		"signingAlgorithm", "certificateArn", "tokenIssuer", "passwordPolicy", "secretPath",
		"saltLength", "credentialsProvider",
		// Ordinary keys.
		"name", "replicas", "image", "LOG_LEVEL", "namespace", "value", "data", "kind", "monitor", "",
	}
	for _, k := range secret {
		if !isSecretKey(k) {
			t.Errorf("isSecretKey(%q) = false, want true", k)
		}
	}
	for _, k := range notSecret {
		if isSecretKey(k) {
			t.Errorf("isSecretKey(%q) = true, want false", k)
		}
	}
}

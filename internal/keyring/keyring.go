// Package keyring encrypts the secrets Kukie stores (Git tokens, SSH
// private keys) with AES-256-GCM under operator-held keys. Each value is
// bound to where it belongs by additional authenticated data, so a sealed
// value copied to another team, cluster or field does not open there; and
// each value names the key that sealed it, so keys can be rotated: the
// first key of the ring seals, every key opens.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// KeySize is the size of a key in bytes (AES-256).
const KeySize = 32

// nonceSize is GCM's standard nonce size; a random nonce of this size is
// safe for far more values than Kukie will ever seal under one key.
const nonceSize = 12

// version prefixes every sealed value, so a later format can be told apart.
const version = "v1"

// Errors of Open. None of them carries key material or plaintext.
var (
	// ErrMalformed is a value that is not a sealed value of this format
	// (truncated, not base64, no key id).
	ErrMalformed = errors.New("keyring: malformed sealed value")
	// ErrUnknownKey is a value sealed with a key the ring does not hold.
	ErrUnknownKey = errors.New("keyring: sealed with a key that is not configured")
	// ErrOpen is a value that fails authentication: wrong context (AAD),
	// altered ciphertext, or a different key under the same id.
	ErrOpen = errors.New("keyring: sealed value does not open (tampered, or sealed for another context)")
)

// Keyring holds the configured keys in order; the first one seals. It is
// safe for concurrent use. Its printed and logged forms show key ids only.
type Keyring struct {
	ids   []string
	aeads map[string]cipher.AEAD
}

// ParseKeys reads a key list, KUKIE_SECRET_KEYS's format: comma-separated
// id:base64 pairs of 32-byte keys (standard or URL base64, padded or not),
// ids of 1 to 32 characters from [A-Za-z0-9_-], each id once. Errors name
// the entry by position and id, never by its key.
func ParseKeys(s string) (*Keyring, error) {
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no keys: expected id:base64 pairs separated by commas")
	}
	for i, entry := range strings.Split(s, ",") {
		pos := i + 1
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("entry %d is empty", pos)
		}
		id, encoded, ok := strings.Cut(entry, ":")
		if !ok {
			// Without a colon the whole entry may be a key: do not echo it.
			return nil, fmt.Errorf("entry %d has no id: expected id:base64", pos)
		}
		id, encoded = strings.TrimSpace(id), strings.TrimSpace(encoded)
		if !validID(id) {
			return nil, fmt.Errorf("entry %d: key id must be 1 to 32 characters of A-Z, a-z, 0-9, _ and -", pos)
		}
		if _, dup := k.aeads[id]; dup {
			return nil, fmt.Errorf("entry %d (id %q): the id is used twice", pos, id)
		}
		key, err := decodeKey(encoded)
		if err != nil {
			return nil, fmt.Errorf("entry %d (id %q): %w", pos, id, err)
		}
		aead, err := newAEAD(key)
		if err != nil {
			return nil, fmt.Errorf("entry %d (id %q): %w", pos, id, err)
		}
		k.ids = append(k.ids, id)
		k.aeads[id] = aead
	}
	return k, nil
}

func validID(id string) bool {
	if len(id) == 0 || len(id) > 32 {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// decodeKey accepts the four base64 alphabets and paddings and requires
// exactly KeySize bytes. Its errors never include the input.
func decodeKey(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("the key is empty")
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("the key must be %d bytes, it decodes to %d (make one with: openssl rand -base64 32)", KeySize, len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("the key is not valid base64")
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Primary returns the id of the key that seals.
func (k *Keyring) Primary() string { return k.ids[0] }

// IDs returns the configured key ids in order, the primary first.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }

// Seal encrypts plaintext with the primary key and a fresh random nonce,
// bound to aad (for example team, cluster, field). The result is text:
// "v1:<key id>:<base64url(nonce || ciphertext || tag)>".
func (k *Keyring) Seal(plaintext []byte, aad ...string) (string, error) {
	id := k.Primary()
	aead := k.aeads[id]
	nonce := make([]byte, nonceSize, nonceSize+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("keyring: read random nonce: %w", err)
	}
	out := aead.Seal(nonce, nonce, plaintext, additionalData(id, aad))
	return version + ":" + id + ":" + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open decrypts a value Seal returned, with the key it names and the same
// aad. It fails with ErrMalformed, ErrUnknownKey or ErrOpen.
func (k *Keyring) Open(sealed string, aad ...string) ([]byte, error) {
	id, body, ok := split(sealed)
	if !ok {
		return nil, ErrMalformed
	}
	aead, ok := k.aeads[id]
	if !ok {
		return nil, fmt.Errorf("%w (key id %q)", ErrUnknownKey, id)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < nonceSize+aead.Overhead() {
		return nil, ErrMalformed
	}
	plaintext, err := aead.Open(nil, raw[:nonceSize], raw[nonceSize:], additionalData(id, aad))
	if err != nil {
		return nil, ErrOpen
	}
	return plaintext, nil
}

// KeyID returns the id of the key that sealed a value, or "" when the value
// is not of this format. It needs no key: it is how rotation finds the
// values still sealed with an old key.
func (k *Keyring) KeyID(sealed string) string { return KeyID(sealed) }

// KeyID is Keyring.KeyID without a ring.
func KeyID(sealed string) string {
	id, _, ok := split(sealed)
	if !ok {
		return ""
	}
	return id
}

// split takes a sealed value apart into its key id and base64 body.
func split(sealed string) (id, body string, ok bool) {
	rest, ok := strings.CutPrefix(sealed, version+":")
	if !ok {
		return "", "", false
	}
	id, body, ok = strings.Cut(rest, ":")
	if !ok || !validID(id) || body == "" {
		return "", "", false
	}
	return id, body, true
}

// additionalData encodes the format version, the key id and the caller's
// parts, each preceded by its length, so no two different lists of parts
// encode alike: ("ab", "c") and ("a", "bc") differ.
func additionalData(id string, parts []string) []byte {
	var b []byte
	for _, p := range append([]string{version, id}, parts...) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// String shows the key ids only; a nil ring is "".
func (k *Keyring) String() string {
	if k == nil {
		return ""
	}
	return "keyring.Keyring{" + strings.Join(k.ids, ",") + "}"
}

// GoString shows the key ids only, also for %#v.
func (k *Keyring) GoString() string { return k.String() }

// LogValue logs the key ids only.
func (k *Keyring) LogValue() slog.Value {
	return slog.GroupValue(slog.String("primary", k.Primary()), slog.Any("key_ids", k.ids))
}

package keyring_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/keyring"
)

// testKey is a 32-byte key made of one repeated byte, in standard base64.
func testKey(b byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, keyring.KeySize))
}

func mustParse(tb testing.TB, s string) *keyring.Keyring {
	tb.Helper()
	k, err := keyring.ParseKeys(s)
	if err != nil {
		tb.Fatalf("ParseKeys: %v", err)
	}
	return k
}

func mustSeal(tb testing.TB, k *keyring.Keyring, plaintext string, aad ...string) string {
	tb.Helper()
	s, err := k.Seal([]byte(plaintext), aad...)
	if err != nil {
		tb.Fatalf("Seal: %v", err)
	}
	return s
}

func TestSealOpenRoundTrip(t *testing.T) {
	k := mustParse(t, "k1:"+testKey(1))
	for _, plaintext := range []string{"", "ghp_0123456789abcdef", strings.Repeat("x", 10_000)} {
		sealed := mustSeal(t, k, plaintext, "team", "cluster", "token")
		if !strings.HasPrefix(sealed, "v1:k1:") {
			t.Errorf("sealed = %q, want the prefix v1:k1:", sealed)
		}
		if plaintext != "" && strings.Contains(sealed, plaintext) {
			t.Errorf("the sealed value holds the plaintext")
		}
		got, err := k.Open(sealed, "team", "cluster", "token")
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if string(got) != plaintext {
			t.Errorf("Open = %q, want %q", got, plaintext)
		}
		if id := k.KeyID(sealed); id != "k1" {
			t.Errorf("KeyID = %q, want k1", id)
		}
	}
	// A fresh nonce each time: the same plaintext seals differently.
	first, second := mustSeal(t, k, "same", "a"), mustSeal(t, k, "same", "a")
	if first == second {
		t.Error("two seals of the same plaintext are equal")
	}
}

func TestOpenFails(t *testing.T) {
	k := mustParse(t, "k1:"+testKey(1))
	sealed := mustSeal(t, k, "secret", "team", "cluster", "token")
	id, body, _ := strings.Cut(strings.TrimPrefix(sealed, "v1:"), ":")
	raw, _ := base64.RawURLEncoding.DecodeString(body)
	flipped := bytes.Clone(raw)
	flipped[len(flipped)-1] ^= 1
	other := mustParse(t, "k1:"+testKey(2)) // same id, another key

	for _, tc := range []struct {
		name   string
		ring   *keyring.Keyring
		sealed string
		aad    []string
		want   error
	}{
		{"ErrWrongTeam", k, sealed, []string{"team2", "cluster", "token"}, keyring.ErrOpen},
		{"ErrWrongField", k, sealed, []string{"team", "cluster", "private_key"}, keyring.ErrOpen},
		{"ErrMissingAAD", k, sealed, nil, keyring.ErrOpen},
		{"ErrAADShifted", k, sealed, []string{"tea", "mcluster", "token"}, keyring.ErrOpen},
		{"ErrAADJoined", k, sealed, []string{"teamcluster", "token"}, keyring.ErrOpen},
		{"ErrTampered", k, "v1:" + id + ":" + base64.RawURLEncoding.EncodeToString(flipped), []string{"team", "cluster", "token"}, keyring.ErrOpen},
		{"ErrOtherKeySameID", other, sealed, []string{"team", "cluster", "token"}, keyring.ErrOpen},
		{"ErrUnknownKeyID", mustParse(t, "k2:"+testKey(1)), sealed, []string{"team", "cluster", "token"}, keyring.ErrUnknownKey},
		{"ErrRelabelled", mustParse(t, "k1:"+testKey(1)+",k2:"+testKey(1)), strings.Replace(sealed, "v1:k1:", "v1:k2:", 1), []string{"team", "cluster", "token"}, keyring.ErrOpen},
		{"ErrTruncated", k, sealed[:len(sealed)-8], []string{"team", "cluster", "token"}, keyring.ErrOpen},
		{"ErrTooShort", k, "v1:k1:" + base64.RawURLEncoding.EncodeToString(raw[:27]), []string{"team", "cluster", "token"}, keyring.ErrMalformed},
		{"ErrPrefixOnly", k, "v1:k1:", nil, keyring.ErrMalformed},
		{"ErrNoKeyID", k, "v1:" + body, nil, keyring.ErrMalformed},
		{"ErrOtherVersion", k, strings.Replace(sealed, "v1:", "v2:", 1), []string{"team", "cluster", "token"}, keyring.ErrMalformed},
		{"ErrNotBase64", k, "v1:k1:***", nil, keyring.ErrMalformed},
		{"ErrEmpty", k, "", nil, keyring.ErrMalformed},
		{"ErrPlaintext", k, "ghp_0123456789", nil, keyring.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.ring.Open(tc.sealed, tc.aad...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %q, %v; want %v", got, err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") && !strings.Contains(tc.want.Error(), "secret") {
				t.Errorf("the error %q mentions the plaintext", err)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	old := mustParse(t, "a:"+testKey(1))
	sealedOld := mustSeal(t, old, "token-1", "t", "c", "token")

	// The new key first: it seals, and the old key still opens what it sealed.
	k := mustParse(t, "b:"+testKey(2)+", a:"+testKey(1))
	if k.Primary() != "b" {
		t.Errorf("Primary = %q, want b", k.Primary())
	}
	if got := fmt.Sprint(k.IDs()); got != "[b a]" {
		t.Errorf("IDs = %s, want [b a]", got)
	}
	got, err := k.Open(sealedOld, "t", "c", "token")
	if err != nil || string(got) != "token-1" {
		t.Fatalf("Open(old value) = %q, %v", got, err)
	}
	sealedNew := mustSeal(t, k, "token-1", "t", "c", "token")
	if keyring.KeyID(sealedNew) != "b" || keyring.KeyID(sealedOld) != "a" {
		t.Errorf("key ids %q, %q; want b, a", keyring.KeyID(sealedNew), keyring.KeyID(sealedOld))
	}
	// With the old key retired, its values no longer open.
	if _, err := mustParse(t, "b:"+testKey(2)).Open(sealedOld, "t", "c", "token"); !errors.Is(err, keyring.ErrUnknownKey) {
		t.Errorf("Open with the old key retired: %v, want ErrUnknownKey", err)
	}
}

func TestKeyIDOfMalformed(t *testing.T) {
	for _, s := range []string{"", "v1:", "v1::abc", "v1:bad id:abc", "v2:k1:abc", "plain"} {
		if id := keyring.KeyID(s); id != "" {
			t.Errorf("KeyID(%q) = %q, want empty", s, id)
		}
	}
}

func TestParseKeysEncodings(t *testing.T) {
	key := bytes.Repeat([]byte{0xfb, 0xff}, 16) // "+/" in standard base64, "-_" in URL base64
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		k := mustParse(t, "id_1-A:"+enc.EncodeToString(key))
		// The same key however written: a value sealed by one opens with another.
		std := mustParse(t, "id_1-A:"+base64.StdEncoding.EncodeToString(key))
		if _, err := std.Open(mustSeal(t, k, "x")); err != nil {
			t.Errorf("%v: key decoded differently: %v", enc, err)
		}
	}
}

func TestParseKeysErrors(t *testing.T) {
	good := testKey(7)
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 16))
	for _, tc := range []struct {
		name, in, want string
	}{
		{"ErrEmpty", "  ", "no keys"},
		{"ErrEmptyEntry", "a:" + good + ",", "entry 2 is empty"},
		{"ErrNoID", good, "entry 1 has no id"},
		{"ErrEmptyID", ":" + good, "entry 1: key id"},
		{"ErrBadID", "a b:" + good, "entry 1: key id"},
		{"ErrLongID", strings.Repeat("x", 33) + ":" + good, "entry 1: key id"},
		{"ErrDuplicateID", "a:" + good + ",b:" + good + ",a:" + testKey(8), `entry 3 (id "a"): the id is used twice`},
		{"ErrShortKey", "a:" + good + ",old:" + short, `entry 2 (id "old"): the key must be 32 bytes, it decodes to 16`},
		{"ErrNotBase64", "a:" + good[:40] + "!!!", `entry 1 (id "a"): the key is not valid base64`},
		{"ErrEmptyKey", "a:", `entry 1 (id "a"): the key is empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := keyring.ParseKeys(tc.in)
			if err == nil {
				t.Fatalf("ParseKeys = %v, want an error", k)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			for _, material := range []string{good, good[:40], short} {
				if strings.Contains(err.Error(), material) {
					t.Errorf("error %q holds key material", err)
				}
			}
		})
	}
}

func TestKeyringPrintsNoKeys(t *testing.T) {
	k := mustParse(t, "new:"+testKey(0xaa)+",old:"+testKey(0xbb))
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("keys", "ring", k)
	out := fmt.Sprintf("%v %+v %#v %s", k, k, k, k) + logs.String()
	for _, b := range []byte{0xaa, 0xbb} {
		raw := bytes.Repeat([]byte{b}, keyring.KeySize)
		for _, s := range []string{testKey(b), string(raw), fmt.Sprint(raw), fmt.Sprintf("%x", raw)} {
			if strings.Contains(out, s) {
				t.Errorf("printed keyring holds key material: %s", out)
			}
		}
	}
	if !strings.Contains(out, "new") || !strings.Contains(logs.String(), `"primary":"new"`) {
		t.Errorf("printed keyring lacks the ids: %s", out)
	}
}

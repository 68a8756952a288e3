package service_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/kukie/gitops-server/internal/keyring"
	"github.com/kukie/gitops-server/service"
)

var _ service.Sealer = (*keyring.Keyring)(nil)

const testToken = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"

func testKeyring(tb testing.TB, spec string) *keyring.Keyring {
	tb.Helper()
	var entries []string
	for _, id := range strings.Split(spec, ",") {
		key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte(id[:1]), keyring.KeySize))
		entries = append(entries, id+":"+key)
	}
	k, err := keyring.ParseKeys(strings.Join(entries, ","))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// sshKey is a fresh ed25519 key: its OpenSSH private key and public key.
func sshKey(tb testing.TB) (string, ssh.PublicKey) {
	tb.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "deploy key")
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		tb.Fatal(err)
	}
	return string(pem.EncodeToMemory(block)), signer.PublicKey()
}

// hostLine is a known_hosts line pinning a fresh host key for host.
func hostLine(tb testing.TB, hosts ...string) string {
	tb.Helper()
	_, pub := sshKey(tb)
	return knownhosts.Line(hosts, pub)
}

func TestValidateRepoAuth(t *testing.T) {
	key, _ := sshKey(t)
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	locked, err := ssh.MarshalPrivateKeyWithPassphrase(edPriv, "", []byte("pass"))
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}))
	hosts := hostLine(t, "github.com") + "\n"
	hashed := hostLine(t, knownhosts.HashHostname("git.internal:2222"))
	_, pub := sshKey(t)
	revokedOnly := "@revoked " + knownhosts.Line([]string{"github.com"}, pub)
	sshAuth := func(privateKey, knownHosts string) service.RepoAuth {
		return service.RepoAuth{Type: service.RepoAuthSSHKey, PrivateKey: privateKey, KnownHosts: knownHosts}
	}

	for _, tc := range []struct {
		name string
		auth service.RepoAuth
		want []string // fields with problems
	}{
		{"None", service.RepoAuth{Type: "none"}, nil},
		{"Token", service.RepoAuth{Type: "https_token", Token: testToken}, nil},
		{"TokenWithUsername", service.RepoAuth{Type: "https_token", Username: "x-access-token", Token: testToken}, nil},
		{"SSHKey", sshAuth(key, hosts), nil},
		{"SSHKeyWithUserAndComments", service.RepoAuth{Type: "ssh_key", Username: "git", PrivateKey: key,
			KnownHosts: "# github\n\n" + hosts + "@cert-authority *.example.com " + strings.SplitN(hostLine(t, "x"), " ", 2)[1]}, nil},
		{"SSHKeyRSAPEM", sshAuth(rsaPEM, hosts), nil},
		{"SSHKeyHashedHost", sshAuth(key, hashed), nil},
		{"ErrUnknownType", service.RepoAuth{Type: "basic"}, []string{"auth.type"}},
		{"ErrEmptyType", service.RepoAuth{}, []string{"auth.type"}},
		{"ErrNoneWithSecrets", service.RepoAuth{Type: "none", Username: "u", Token: "t", PrivateKey: key, KnownHosts: hosts},
			[]string{"auth.username", "auth.token", "auth.private_key", "auth.known_hosts"}},
		{"ErrTokenMissing", service.RepoAuth{Type: "https_token"}, []string{"auth.token"}},
		{"ErrTokenNewline", service.RepoAuth{Type: "https_token", Token: "abc\r\nX-Injected: 1"}, []string{"auth.token"}},
		{"ErrTokenTooLong", service.RepoAuth{Type: "https_token", Token: strings.Repeat("a", 5000)}, []string{"auth.token"}},
		{"ErrTokenWithKey", service.RepoAuth{Type: "https_token", Token: testToken, PrivateKey: key, KnownHosts: hosts},
			[]string{"auth.private_key", "auth.known_hosts"}},
		{"ErrUsernameColon", service.RepoAuth{Type: "https_token", Username: "a:b", Token: testToken}, []string{"auth.username"}},
		{"ErrKeyMissing", sshAuth("", hosts), []string{"auth.private_key"}},
		{"ErrKeyGarbage", sshAuth("-----BEGIN OPENSSH PRIVATE KEY-----\nnope\n-----END OPENSSH PRIVATE KEY-----\n", hosts), []string{"auth.private_key"}},
		{"ErrKeyPublic", sshAuth(string(ssh.MarshalAuthorizedKey(pub)), hosts), []string{"auth.private_key"}},
		{"ErrKeyPassphrase", sshAuth(string(pem.EncodeToMemory(locked)), hosts), []string{"auth.private_key"}},
		{"ErrKnownHostsMissing", sshAuth(key, ""), []string{"auth.known_hosts"}},
		{"ErrKnownHostsBlank", sshAuth(key, "  \n# only a comment\n"), []string{"auth.known_hosts"}},
		{"ErrKnownHostsGarbage", sshAuth(key, hosts+"github.com ssh-ed25519 !!!notbase64\n"), []string{"auth.known_hosts"}},
		{"ErrKnownHostsNoHost", sshAuth(key, strings.SplitN(hosts, " ", 2)[1]), []string{"auth.known_hosts"}},
		{"ErrKnownHostsBadHash", sshAuth(key, "|1|abc|def "+strings.SplitN(hosts, " ", 2)[1]), []string{"auth.known_hosts"}},
		{"ErrKnownHostsRevokedOnly", sshAuth(key, revokedOnly), []string{"auth.known_hosts"}},
		{"ErrSSHWithToken", service.RepoAuth{Type: "ssh_key", Token: testToken, PrivateKey: key, KnownHosts: hosts}, []string{"auth.token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := service.ValidateRepoAuth(tc.auth)
			var fields []string
			if err != nil {
				if service.ErrorCode(err) != service.EVALIDATION {
					t.Fatalf("code %q (%v), want validation", service.ErrorCode(err), err)
				}
				var se *service.Error
				errors.As(err, &se)
				for _, f := range se.Fields {
					fields = append(fields, f.Field)
					for _, secret := range []string{tc.auth.Token, tc.auth.PrivateKey} {
						if len(secret) > 8 && strings.Contains(f.Message, secret[len(secret)/2:]) {
							t.Errorf("%s: the message quotes a secret: %s", f.Field, f.Message)
						}
					}
				}
			}
			if diff := cmp.Diff(tc.want, fields); diff != "" {
				t.Errorf("fields (-want +got):\n%s\n%v", diff, err)
			}
		})
	}

	t.Run("PassphraseSaysSo", func(t *testing.T) {
		err := service.ValidateRepoAuth(sshAuth(string(pem.EncodeToMemory(locked)), hosts))
		var se *service.Error
		if !errors.As(err, &se) || len(se.Fields) != 1 || !strings.Contains(se.Fields[0].Message, "passphrase") {
			t.Errorf("error %v, want a message about the passphrase", err)
		}
	})
}

func TestFingerprint(t *testing.T) {
	key, pub := sshKey(t)
	for _, tc := range []struct {
		name string
		auth service.RepoAuth
		want string
	}{
		{"None", service.RepoAuth{Type: "none"}, ""},
		{"TokenLast4", service.RepoAuth{Type: "https_token", Token: testToken}, "…6789"},
		{"TokenMultibyte", service.RepoAuth{Type: "https_token", Token: "0123456789abcdef토큰값끝"}, "…토큰값끝"},
		{"ShortTokenHidden", service.RepoAuth{Type: "https_token", Token: "hunter2"}, "…"},
		{"SSHPublicKey", service.RepoAuth{Type: "ssh_key", PrivateKey: key}, ssh.FingerprintSHA256(pub)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := service.Fingerprint(tc.auth)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Fingerprint = %q, want %q", got, tc.want)
			}
		})
	}
	if fp, _ := service.Fingerprint(service.RepoAuth{Type: "ssh_key", PrivateKey: key}); !strings.HasPrefix(fp, "SHA256:") {
		t.Errorf("ssh fingerprint %q lacks SHA256:", fp)
	}
	if _, err := service.Fingerprint(service.RepoAuth{Type: "ssh_key", PrivateKey: "junk"}); service.ErrorCode(err) != service.EVALIDATION {
		t.Errorf("unparsable key: %v, want validation", err)
	}
}

func TestRepoAuthNeverPrintsSecrets(t *testing.T) {
	key, _ := sshKey(t)
	a := service.RepoAuth{Type: "ssh_key", Username: "git", Token: testToken, PrivateKey: key, KnownHosts: "h"}
	js, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("auth", "auth", a)
	out := string(js) + fmt.Sprintf("%v %+v %#v %s", a, a, a, a) + logs.String()
	for _, secret := range []string{testToken, key[40:80]} {
		if strings.Contains(out, secret) {
			t.Errorf("printed credentials hold a secret: %s", out)
		}
	}
	if !strings.Contains(logs.String(), `"type":"ssh_key"`) {
		t.Errorf("log lacks the type: %s", logs.String())
	}
}

func TestSealOpenRepoAuth(t *testing.T) {
	key, _ := sshKey(t)
	hosts := hostLine(t, "github.com")
	k := testKeyring(t, "a")
	for _, a := range []service.RepoAuth{
		{Type: "none"},
		{Type: "https_token", Username: "bot", Token: testToken},
		{Type: "ssh_key", Username: "git", PrivateKey: key, KnownHosts: hosts},
	} {
		t.Run(a.Type, func(t *testing.T) {
			s, err := service.SealRepoAuth(k, "t1", "c1", a)
			if err != nil {
				t.Fatal(err)
			}
			if (s.KeyID == "a") != (a.Type != "none") {
				t.Errorf("KeyID = %q", s.KeyID)
			}
			if a.Token != "" && (s.TokenSealed == "" || strings.Contains(s.TokenSealed, a.Token)) {
				t.Errorf("token not sealed: %q", s.TokenSealed)
			}
			fp, _ := service.Fingerprint(a)
			want := service.RepoAuthView{Type: a.Type, Username: a.Username, Fingerprint: fp}
			if diff := cmp.Diff(want, s.View()); diff != "" {
				t.Errorf("view (-want +got):\n%s", diff)
			}
			got, err := service.OpenRepoAuth(k, s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(a, got); diff != "" {
				t.Errorf("opened (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("ErrMovedToAnotherCluster", func(t *testing.T) {
		s, err := service.SealRepoAuth(k, "t1", "c1", service.RepoAuth{Type: "https_token", Token: testToken})
		if err != nil {
			t.Fatal(err)
		}
		for _, moved := range []struct{ team, cluster string }{{"t2", "c1"}, {"t1", "c2"}} {
			m := s
			m.TeamID, m.ClusterID = moved.team, moved.cluster
			if _, err := service.OpenRepoAuth(k, m); service.ErrorCode(err) != service.EINTERNAL {
				t.Errorf("opened in %v: %v, want internal", moved, err)
			}
		}
	})
	t.Run("ErrTokenAsPrivateKey", func(t *testing.T) {
		s, _ := service.SealRepoAuth(k, "t1", "c1", service.RepoAuth{Type: "https_token", Token: testToken})
		s.PrivateKeySealed, s.TokenSealed = s.TokenSealed, ""
		if _, err := service.OpenRepoAuth(k, s); service.ErrorCode(err) != service.EINTERNAL {
			t.Errorf("a token opened as a private key: %v", err)
		}
	})
	t.Run("ErrNoKeysForSecrets", func(t *testing.T) {
		_, err := service.SealRepoAuth(nil, "t1", "c1", service.RepoAuth{Type: "https_token", Token: testToken})
		if service.ErrorReason(err) != "secret_keys_not_configured" || service.ErrorCode(err) != service.EVALIDATION {
			t.Errorf("err = %v, want secret_keys_not_configured", err)
		}
		s, err := service.SealRepoAuth(nil, "t1", "c1", service.RepoAuth{Type: "none"})
		if err != nil || s.Type != "none" {
			t.Errorf("none without keys: %+v, %v", s, err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		_, err := service.SealRepoAuth(k, "t1", "c1", service.RepoAuth{Type: "ssh_key", PrivateKey: key})
		if service.ErrorCode(err) != service.EVALIDATION {
			t.Errorf("no known_hosts: %v, want validation", err)
		}
	})
}

func TestRekeyRepoAuth(t *testing.T) {
	key, _ := sshKey(t)
	old := testKeyring(t, "a")
	s, err := service.SealRepoAuth(old, "t1", "c1", service.RepoAuth{Type: "ssh_key", PrivateKey: key, KnownHosts: hostLine(t, "h")})
	if err != nil {
		t.Fatal(err)
	}
	k := testKeyring(t, "b,a")
	out, changed, err := service.RekeyRepoAuth(k, s)
	if err != nil || !changed {
		t.Fatalf("RekeyRepoAuth = %v, %v", changed, err)
	}
	if out.KeyID != "b" || k.KeyID(out.PrivateKeySealed) != "b" || out.Fingerprint != s.Fingerprint {
		t.Errorf("rekeyed %+v", out)
	}
	got, err := service.OpenRepoAuth(testKeyring(t, "b"), out)
	if err != nil || got.PrivateKey != key {
		t.Fatalf("open with the new key alone: %v", err)
	}
	// Again: nothing to do.
	if again, changed, err := service.RekeyRepoAuth(k, out); err != nil || changed || again != out {
		t.Errorf("second rekey: changed %v, %v", changed, err)
	}
	none, _ := service.SealRepoAuth(k, "t1", "c2", service.RepoAuth{Type: "none"})
	if _, changed, err := service.RekeyRepoAuth(k, none); err != nil || changed {
		t.Errorf("rekey of none: changed %v, %v", changed, err)
	}
	// A value under a key no longer configured cannot be rekeyed.
	if _, _, err := service.RekeyRepoAuth(testKeyring(t, "c"), s); service.ErrorCode(err) != service.EINTERNAL {
		t.Errorf("rekey without the old key: %v, want internal", err)
	}
}

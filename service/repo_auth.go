package service

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"
)

// How Kukie authenticates to a cluster's GitOps repository.
const (
	RepoAuthNone       = "none"        // anonymous (public repositories)
	RepoAuthHTTPSToken = "https_token" // HTTP basic auth with a token (or password)
	RepoAuthSSHKey     = "ssh_key"     // an SSH private key and pinned host keys
)

// Size limits of repository credentials: far above real values, low enough
// that a request cannot store megabytes.
const (
	maxRepoUsername   = 256
	maxRepoToken      = 4 << 10
	maxRepoPrivateKey = 16 << 10
	maxRepoKnownHosts = 64 << 10
)

// tokenHintMin is the shortest token whose last 4 characters are shown as
// its fingerprint: of a shorter one (a password) they would be too much.
const tokenHintMin = 16

// RepoAuth is the credentials of a cluster's GitOps repository as an admin
// gives them. Token and PrivateKey are secrets: never JSON-encoded, and the
// printed and logged forms leave them out.
type RepoAuth struct {
	Type       string `json:"type"`
	Username   string `json:"username,omitempty"`
	Token      string `json:"-"`
	PrivateKey string `json:"-"`
	// KnownHosts pins the SSH host keys (known_hosts lines); public.
	KnownHosts string `json:"known_hosts,omitempty"`
}

// String shows the type and username only.
func (a RepoAuth) String() string {
	return fmt.Sprintf("RepoAuth{Type:%s Username:%s}", a.Type, a.Username)
}

// GoString shows the type and username only, also for %#v.
func (a RepoAuth) GoString() string { return a.String() }

// LogValue logs the type and username only.
func (a RepoAuth) LogValue() slog.Value {
	return slog.GroupValue(slog.String("type", a.Type), slog.String("username", a.Username))
}

// RepoAuthView is what responses show of repository credentials.
type RepoAuthView struct {
	Type        string `json:"type"`
	Username    string `json:"username,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

// ValidateRepoAuth checks credentials before they are stored: a known type
// with exactly the fields it uses; a token for https_token; for ssh_key a
// parsable private key without a passphrase and the host keys to pin (a
// host key is never accepted blindly). Problems are EVALIDATION with
// fields under "auth.", and never quote a secret.
func ValidateRepoAuth(a RepoAuth) error {
	var v ValidationErrors
	if a.Type != RepoAuthNone &&
		(len(a.Username) > maxRepoUsername || !printable(a.Username) || strings.ContainsAny(a.Username, ": ")) {
		v.Add("auth.username", "must be at most %d printable characters without spaces or ':'.", maxRepoUsername)
	}
	unused := func(field, value string) {
		if value != "" {
			v.Add("auth."+field, "is not used with type %q; leave it out.", a.Type)
		}
	}
	switch a.Type {
	case RepoAuthNone:
		unused("username", a.Username)
		unused("token", a.Token)
		unused("private_key", a.PrivateKey)
		unused("known_hosts", a.KnownHosts)
	case RepoAuthHTTPSToken:
		switch {
		case a.Token == "":
			v.Add("auth.token", "is required with type https_token.")
		case len(a.Token) > maxRepoToken || !printable(a.Token) || strings.Contains(a.Token, " "):
			v.Add("auth.token", "must be at most %d printable characters without spaces.", maxRepoToken)
		}
		unused("private_key", a.PrivateKey)
		unused("known_hosts", a.KnownHosts)
	case RepoAuthSSHKey:
		if a.PrivateKey == "" {
			v.Add("auth.private_key", "is required with type ssh_key.")
		} else if _, err := sshSigner(a.PrivateKey); err != nil {
			v.Add("auth.private_key", "%s", ErrorMessage(err))
		}
		if err := checkKnownHosts(a.KnownHosts); err != nil {
			v.Add("auth.known_hosts", "%s", err)
		}
		unused("token", a.Token)
	default:
		v.Add("auth.type", "must be none, https_token or ssh_key.")
	}
	return v.Err()
}

// printable reports whether s is valid UTF-8 without control characters
// (a header or a log line cannot be split with it).
func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// sshSigner parses a PEM or OpenSSH private key. Its errors are EVALIDATION
// with a message safe to show: they never quote the key.
func sshSigner(privateKey string) (ssh.Signer, error) {
	if len(privateKey) > maxRepoPrivateKey {
		return nil, Errorf(EVALIDATION, "must be at most %d bytes.", maxRepoPrivateKey)
	}
	raw, err := ssh.ParseRawPrivateKey([]byte(privateKey))
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		return nil, Errorf(EVALIDATION, "is protected by a passphrase; give a key without one (ssh-keygen -p -N '' -f KEY removes it from a copy).")
	} else if err != nil {
		return nil, Errorf(EVALIDATION, "is not a PEM or OpenSSH private key Kukie can read.")
	}
	signer, err := ssh.NewSignerFromKey(raw)
	if err != nil {
		return nil, Errorf(EVALIDATION, "is a key type SSH cannot sign with.")
	}
	return signer, nil
}

// checkKnownHosts requires at least one host key in known_hosts format
// (the lines of ~/.ssh/known_hosts or ssh-keyscan's output) and every line
// to parse: a line Kukie cannot read would silently pin nothing.
func checkKnownHosts(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("is required with type ssh_key: the repository host's keys in known_hosts format (ssh-keyscan HOST); no host key is accepted unpinned")
	}
	if len(s) > maxRepoKnownHosts {
		return fmt.Errorf("must be at most %d bytes", maxRepoKnownHosts)
	}
	keys := 0
	for n, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		marker, hosts, _, _, _, err := ssh.ParseKnownHosts([]byte(line))
		if err != nil || len(hosts) == 0 {
			return fmt.Errorf("line %d is not a known_hosts entry (hosts, key type, base64 key)", n+1)
		}
		for _, h := range hosts {
			if strings.HasPrefix(h, "|") && !validHashedHost(h) {
				return fmt.Errorf("line %d has a hashed host that is not |1|salt|hash", n+1)
			}
		}
		if marker != "revoked" {
			keys++
		}
	}
	if keys == 0 {
		return errors.New("holds no host key (only comments or @revoked lines)")
	}
	return nil
}

// validHashedHost checks OpenSSH's hashed host form, |1|base64(salt)|base64(sha1).
func validHashedHost(h string) bool {
	parts := strings.Split(h, "|")
	if len(parts) != 4 || parts[0] != "" || parts[1] != "1" {
		return false
	}
	salt, err1 := base64.StdEncoding.DecodeString(parts[2])
	hash, err2 := base64.StdEncoding.DecodeString(parts[3])
	return err1 == nil && err2 == nil && len(salt) == 20 && len(hash) == 20
}

// Fingerprint is what users see to recognise credentials without the
// secret: "SHA256:…" of an SSH key's public key; "…" and the last 4
// characters of a token of at least 16 characters ("…" alone for a shorter
// one); "" for none. It is never a hash of a secret.
func Fingerprint(a RepoAuth) (string, error) {
	switch a.Type {
	case RepoAuthNone:
		return "", nil
	case RepoAuthHTTPSToken:
		if utf8.RuneCountInString(a.Token) < tokenHintMin {
			return "…", nil
		}
		r := []rune(a.Token)
		return "…" + string(r[len(r)-4:]), nil
	case RepoAuthSSHKey:
		signer, err := sshSigner(a.PrivateKey)
		if err != nil {
			return "", err
		}
		return ssh.FingerprintSHA256(signer.PublicKey()), nil
	}
	return "", Errorf(EVALIDATION, "Unknown repository auth type %q.", a.Type)
}

// Sealer encrypts secrets for storage; *keyring.Keyring implements it.
// aad binds a value to where it belongs: Open with other aad fails.
type Sealer interface {
	Seal(plaintext []byte, aad ...string) (string, error)
	Open(sealed string, aad ...string) ([]byte, error)
	// KeyID names the key that sealed a value.
	KeyID(sealed string) string
	// Primary names the key Seal uses.
	Primary() string
}

// SealedRepoAuth is a cluster's repository credentials as stored: secrets
// sealed, bound to (team, cluster, field).
type SealedRepoAuth struct {
	TeamID           string
	ClusterID        string
	Type             string
	Username         string
	TokenSealed      string
	PrivateKeySealed string
	KnownHosts       string
	Fingerprint      string
	// KeyID names the key that sealed the secrets; "" without secrets.
	KeyID     string
	UpdatedAt time.Time
}

// View is what responses show of the stored credentials.
func (s SealedRepoAuth) View() RepoAuthView {
	return RepoAuthView{Type: s.Type, Username: s.Username, Fingerprint: s.Fingerprint}
}

// The field names in the AAD of each sealed secret.
const (
	aadRepoToken      = "cluster_repo_auth.token"
	aadRepoPrivateKey = "cluster_repo_auth.private_key"
)

// ErrSecretKeysNotConfigured is the answer for credentials with a secret
// when the server has no KUKIE_SECRET_KEYS.
func ErrSecretKeysNotConfigured() error {
	return ReasonError(EVALIDATION, ReasonSecretKeysNotConfigured,
		"This server cannot store repository secrets: KUKIE_SECRET_KEYS is not configured. Only auth type none is accepted.")
}

// ErrRepoAuthNotFound is the answer when a cluster has no stored
// repository credentials.
func ErrRepoAuthNotFound() error {
	return ReasonError(ENOTFOUND, ReasonRepoAuthNotFound, "The cluster has no repository credentials.")
}

// SealRepoAuth validates credentials and seals their secrets with k's
// primary key for one cluster of one team. k may be nil when the server has
// no keys: then only type none is accepted.
func SealRepoAuth(k Sealer, teamID, clusterID string, a RepoAuth) (SealedRepoAuth, error) {
	if err := ValidateRepoAuth(a); err != nil {
		return SealedRepoAuth{}, err
	}
	fp, err := Fingerprint(a)
	if err != nil {
		return SealedRepoAuth{}, err
	}
	s := SealedRepoAuth{TeamID: teamID, ClusterID: clusterID, Type: a.Type, Username: a.Username,
		KnownHosts: a.KnownHosts, Fingerprint: fp}
	if a.Token == "" && a.PrivateKey == "" {
		return s, nil
	}
	if k == nil {
		return SealedRepoAuth{}, ErrSecretKeysNotConfigured()
	}
	s.KeyID = k.Primary()
	if s.TokenSealed, err = sealField(k, teamID, clusterID, aadRepoToken, a.Token); err != nil {
		return SealedRepoAuth{}, err
	}
	if s.PrivateKeySealed, err = sealField(k, teamID, clusterID, aadRepoPrivateKey, a.PrivateKey); err != nil {
		return SealedRepoAuth{}, err
	}
	return s, nil
}

func sealField(k Sealer, teamID, clusterID, field, value string) (string, error) {
	if value == "" {
		return "", nil
	}
	sealed, err := k.Seal([]byte(value), teamID, clusterID, field)
	if err != nil {
		return "", WrapError(EINTERNAL, "Repository credentials cannot be encrypted.", err)
	}
	return sealed, nil
}

// OpenRepoAuth decrypts stored credentials for use. A value that does not
// open (its key was retired, or the row was altered or moved) is EINTERNAL:
// the operator must restore the key or the admin reconnect the repository.
func OpenRepoAuth(k Sealer, s SealedRepoAuth) (RepoAuth, error) {
	a := RepoAuth{Type: s.Type, Username: s.Username, KnownHosts: s.KnownHosts}
	if s.TokenSealed == "" && s.PrivateKeySealed == "" {
		return a, nil
	}
	if k == nil {
		return RepoAuth{}, WrapError(EINTERNAL, "The repository credentials cannot be decrypted: KUKIE_SECRET_KEYS is not configured.",
			fmt.Errorf("team %s cluster %s: stored secrets sealed with key %q", s.TeamID, s.ClusterID, s.KeyID))
	}
	var err error
	if a.Token, err = openField(k, s, aadRepoToken, s.TokenSealed); err != nil {
		return RepoAuth{}, err
	}
	if a.PrivateKey, err = openField(k, s, aadRepoPrivateKey, s.PrivateKeySealed); err != nil {
		return RepoAuth{}, err
	}
	return a, nil
}

func openField(k Sealer, s SealedRepoAuth, field, sealed string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	b, err := k.Open(sealed, s.TeamID, s.ClusterID, field)
	if err != nil {
		return "", WrapError(EINTERNAL, "The repository credentials cannot be decrypted with the configured keys.",
			fmt.Errorf("team %s cluster %s %s: %w", s.TeamID, s.ClusterID, field, err))
	}
	return string(b), nil
}

// RekeyRepoAuth re-seals with k's primary key every secret of s sealed with
// another key; changed is false when s needs nothing (so a rekey run twice
// changes nothing the second time). The fingerprint stays: the secrets do.
func RekeyRepoAuth(k Sealer, s SealedRepoAuth) (out SealedRepoAuth, changed bool, err error) {
	if !needsRekey(k, s.TokenSealed) && !needsRekey(k, s.PrivateKeySealed) && (s.KeyID == k.Primary() || s.KeyID == "") {
		return s, false, nil
	}
	a, err := OpenRepoAuth(k, s)
	if err != nil {
		return s, false, err
	}
	out = s
	out.KeyID = k.Primary()
	if out.TokenSealed, err = sealField(k, s.TeamID, s.ClusterID, aadRepoToken, a.Token); err != nil {
		return s, false, err
	}
	if out.PrivateKeySealed, err = sealField(k, s.TeamID, s.ClusterID, aadRepoPrivateKey, a.PrivateKey); err != nil {
		return s, false, err
	}
	return out, true, nil
}

func needsRekey(k Sealer, sealed string) bool {
	return sealed != "" && k.KeyID(sealed) != k.Primary()
}

// RepoAuthStore persists the sealed credentials of clusters' repositories.
// Methods taking a team are scoped to it: another team's cluster is
// ENOTFOUND (cluster_not_found, or repo_auth_not_found when the cluster
// has none stored). Rows go with their cluster.
type RepoAuthStore interface {
	// PutRepoAuth stores (or replaces) the cluster's credentials; a sealed
	// for another team or cluster is EINTERNAL (it would never open).
	PutRepoAuth(ctx context.Context, teamID, clusterID string, a SealedRepoAuth, now time.Time) (SealedRepoAuth, error)
	GetRepoAuth(ctx context.Context, teamID, clusterID string) (SealedRepoAuth, error)
	DeleteRepoAuth(ctx context.Context, teamID, clusterID string) error
	// ListSealedSecrets returns every team's stored credentials that hold
	// a sealed secret, for rekeying.
	ListSealedSecrets(ctx context.Context) ([]SealedRepoAuth, error)
	// ReplaceSealed swaps the sealed secrets of old's row for next's,
	// only if the row still holds old's: replaced is false when the
	// credentials changed (or went) meanwhile.
	ReplaceSealed(ctx context.Context, old, next SealedRepoAuth) (replaced bool, err error)
}

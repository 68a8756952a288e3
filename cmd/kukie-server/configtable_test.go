package main

import (
	"encoding/base64"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readmeConfigRow is one row of the README's Configuration table.
type readmeConfigRow struct{ name, def string }

// readmeConfigTable reads the rows of the table under the README's
// "## Configuration" heading: the variable, and the Default column without
// its code backticks.
func readmeConfigTable(t *testing.T) []readmeConfigRow {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Configuration\n")
	if !ok {
		t.Fatal(`README.md has no "## Configuration" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("^\\| `(KUKIE_[A-Z0-9_]+)` \\|([^|]*)\\| .*[^ ] \\|$")
	var rows []readmeConfigRow
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") || line == "| Variable | Default | Meaning |" || line == "|---|---|---|" {
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("README.md: a Configuration table row not of the form | `KUKIE_X` | default | meaning |: %q", line)
			continue
		}
		def := strings.TrimSpace(m[2])
		if strings.HasPrefix(def, "`") && strings.HasSuffix(def, "`") && len(def) > 1 {
			def = def[1 : len(def)-1]
		}
		rows = append(rows, readmeConfigRow{m[1], def})
	}
	if len(rows) == 0 {
		t.Fatal("README.md: no rows in the Configuration table")
	}
	return rows
}

// The README's Configuration table has exactly configVars' variables, in
// the same order, each with configVars' default.
func TestConfigTableREADME(t *testing.T) {
	var want []readmeConfigRow
	for _, v := range configVars {
		want = append(want, readmeConfigRow{v.name, v.def})
	}
	got := readmeConfigTable(t)
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(readmeConfigRow{})); diff != "" {
		t.Errorf("README.md's Configuration table differs from configVars (-configVars +README):\n%s", diff)
	}
}

// Each row of configVars is whole: a KUKIE_* name used once, a parser, one
// line of meaning, and "(required)" as the default exactly when unset is
// refused.
func TestConfigTableRows(t *testing.T) {
	name := regexp.MustCompile(`^KUKIE_[A-Z0-9_]+$`)
	seen := map[string]bool{}
	for _, v := range configVars {
		if !name.MatchString(v.name) || seen[v.name] {
			t.Errorf("%q: not a KUKIE_* name, or named twice", v.name)
		}
		seen[v.name] = true
		if v.parse == nil {
			t.Errorf("%s has no parser", v.name)
		}
		if v.meaning == "" || strings.Contains(v.meaning, "\n") {
			t.Errorf("%s: the meaning %q is not one line", v.name, v.meaning)
		}
		if (v.required != "") != (v.def == "(required)") {
			t.Errorf("%s: default %q with required %q", v.name, v.def, v.required)
		}
	}
}

// Each default configVars shows is the default: setting a variable to its
// default text reads the same configuration as leaving it unset.
func TestConfigTableDefaults(t *testing.T) {
	base := map[string]string{
		"KUKIE_DATABASE_URL":      "postgres://postgres@127.0.0.1:5432/kukie",
		"KUKIE_AUTH_HS256_SECRET": strings.Repeat("s", 32),
	}
	want, err := loadConfig(func(k string) string { return base[k] }, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range configVars {
		set := v.def
		switch v.def {
		case "", "(required)":
			continue
		case "GOMAXPROCS":
			set = strconv.Itoa(runtime.GOMAXPROCS(0))
		}
		t.Run(v.name, func(t *testing.T) {
			env := maps.Clone(base)
			env[v.name] = set
			got, err := loadConfig(func(k string) string { return env[k] }, true)
			if err != nil {
				t.Fatalf("%s=%s: %v", v.name, set, err)
			}
			want := want
			if v.name == "KUKIE_REPO_CACHE_BYTES" {
				// Unset, the config keeps 0, which gitrepo.Options takes for
				// the 1 GiB the table shows.
				want.RepoCacheBytes = 1 << 30
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s=%s reads\n%+v\nunset reads\n%+v", v.name, set, got, want)
			}
		})
	}
}

// A secret variable's value is not in the logged configuration.
func TestConfigTableSecrets(t *testing.T) {
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	// Each secret variable's sample value and the secret in it.
	samples := map[string]struct{ value, secret string }{
		"KUKIE_DATABASE_URL":      {"postgres://kukie:hunter2-db@127.0.0.1:5432/kukie", "hunter2-db"},
		"KUKIE_AUTH_HS256_SECRET": {"hunter2-hs256-" + strings.Repeat("s", 32), "hunter2-hs256-"},
		"KUKIE_SECRET_KEYS":       {"k1:" + key, key},
	}
	for _, v := range configVars {
		if !v.secret {
			continue
		}
		sample, ok := samples[v.name]
		if !ok {
			t.Errorf("%s is secret but has no sample value here", v.name)
			continue
		}
		env := map[string]string{
			"KUKIE_DATABASE_URL":      "postgres://postgres@127.0.0.1:5432/kukie",
			"KUKIE_AUTH_HS256_SECRET": strings.Repeat("s", 32),
			v.name:                    sample.value,
		}
		cfg, err := loadConfig(func(k string) string { return env[k] }, true)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		var logged strings.Builder
		slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "config", cfg)
		if strings.Contains(logged.String(), sample.secret) {
			t.Errorf("%s: the logged configuration holds its value: %s", v.name, logged.String())
		}
	}
}

package helmrepo

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// index is the part of a repository's index.yaml this package reads.
type index struct {
	Entries map[string][]entry `json:"entries"`
}

// entry is one chart version in index.yaml.
type entry struct {
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
}

func parseIndex(data []byte) (*index, error) {
	var idx index
	if err := yaml.Unmarshal(data, &idx); err != nil {
		return nil, err
	}
	if idx.Entries == nil {
		return nil, fmt.Errorf("no entries")
	}
	return &idx, nil
}

// resolve picks chart's entry for version as Argo CD does: a version listed
// exactly wins; otherwise version is a semver constraint ("1.2.*",
// ">=1.0 <2.0"; empty means any) and the highest matching version is taken.
// Prereleases match only a constraint that names one (Masterminds semver),
// and never the empty constraint.
func (idx *index) resolve(chart, version string) (entry, error) {
	entries, ok := idx.Entries[chart]
	if !ok || len(entries) == 0 {
		return entry{}, notFound(fmt.Sprintf("The Helm repository has no chart %q.", chart))
	}
	version = strings.TrimSpace(version)
	if version != "" {
		for _, e := range entries {
			if e.Version == version {
				return e, nil
			}
		}
	}
	constraint := version
	if constraint == "" {
		constraint = "*"
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return entry{}, notFound(fmt.Sprintf("Chart %q has no version %q, and %q is not a semver constraint.", chart, version, version))
	}
	var best entry
	var bestV *semver.Version
	for _, e := range entries {
		v, err := semver.NewVersion(e.Version)
		if err != nil || !c.Check(v) {
			continue
		}
		if bestV == nil || v.GreaterThan(bestV) {
			best, bestV = e, v
		}
	}
	if bestV == nil {
		if version == "" {
			return entry{}, notFound(fmt.Sprintf("Chart %q has no released (non-prerelease) version.", chart))
		}
		return entry{}, notFound(fmt.Sprintf("Chart %q has no version matching %q.", chart, version))
	}
	return best, nil
}

package sns

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sdkModule is the module whose endpoint data knownRegions follows.
const sdkModule = "github.com/aws/aws-sdk-go-v2"

// TestKnownRegionsAreTheSDKs compares knownRegions with the partitions data
// of the AWS SDK version go.mod pins (its
// internal/endpoints/awsrulesfn/partitions.json, read from the module
// cache): the same regions — those matching the partition's regionRegex,
// so not the pseudo-region aws-global — and the DNS suffix of every
// supported partition. When the SDK is updated and this fails, copy the
// new regions into regions.go.
func TestKnownRegionsAreTheSDKs(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", sdkModule).Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Fatalf("go list -m %s: %v (%q): the module must be in the module cache; run `go mod download %s`",
			sdkModule, err, out, sdkModule)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "internal", "endpoints", "awsrulesfn", "partitions.json"))
	if err != nil {
		t.Fatalf("the SDK's partitions data: %v", err)
	}
	var data struct {
		Partitions []struct {
			ID      string `json:"id"`
			Outputs struct {
				DNSSuffix string `json:"dnsSuffix"`
			} `json:"outputs"`
			RegionRegex string                     `json:"regionRegex"`
			Regions     map[string]json.RawMessage `json:"regions"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatalf("the SDK's partitions data: %v", err)
	}
	seen := map[string]bool{}
	for _, p := range data.Partitions {
		ours, supported := knownRegions[p.ID]
		if !supported {
			continue
		}
		seen[p.ID] = true
		if got := partitionDomain[p.ID]; got != p.Outputs.DNSSuffix {
			t.Errorf("partition %s: our DNS suffix %q, the SDK's %q", p.ID, got, p.Outputs.DNSSuffix)
		}
		pattern, err := regexp.Compile(p.RegionRegex)
		if err != nil {
			t.Fatalf("partition %s: regionRegex %q: %v", p.ID, p.RegionRegex, err)
		}
		var sdk []string
		for r := range p.Regions {
			if pattern.MatchString(r) {
				sdk = append(sdk, r)
			}
		}
		slices.Sort(sdk)
		var got []string
		for r := range ours {
			got = append(got, r)
		}
		slices.Sort(got)
		if diff := cmp.Diff(sdk, got); diff != "" {
			t.Errorf("partition %s: regions (-SDK +ours):\n%s", p.ID, diff)
		}
		for _, r := range got {
			if !regionPattern.MatchString(r) {
				t.Errorf("partition %s: region %q does not match regionPattern", p.ID, r)
			}
		}
	}
	for id := range knownRegions {
		if !seen[id] {
			t.Errorf("partition %s is not in the SDK's data", id)
		}
	}
	if len(knownRegions) != len(partitionDomain) {
		t.Errorf("knownRegions has %d partitions, partitionDomain %d", len(knownRegions), len(partitionDomain))
	}
}

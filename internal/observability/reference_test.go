package observability

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/testenv"
)

var tableMetricRE = regexp.MustCompile("(?m)^\\| `(tollgate_[a-z0-9_]+)` \\|")

// TestMetricsReference checks that docs/observability.md's metric tables list exactly the tollgate_
// metrics the decider's and the manager's registries describe.
func TestMetricsReference(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range tableMetricRE.FindAllStringSubmatch(string(data), -1) {
		if documented[m[1]] {
			t.Errorf("docs/observability.md lists %s twice", m[1])
		}
		documented[m[1]] = true
	}
	exported := map[string]bool{}
	for n := range exportedMetrics(t) {
		if strings.HasPrefix(n, "tollgate_") {
			exported[n] = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(exported)) {
		if !documented[n] {
			t.Errorf("%s is exported but not in docs/observability.md's tables", n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(documented)) {
		if !exported[n] {
			t.Errorf("docs/observability.md lists %s, which no registry describes", n)
		}
	}
	t.Logf("%d tollgate_ metrics documented", len(documented))
}

package chartrender

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/strvals"
)

// helm lint --strict passes for the default values and each option (make helm-lint runs the
// default-values case through hack/helmlint).
func TestHelmLint(t *testing.T) {
	for _, set := range [][]string{
		nil,
		{"webhook.certificates.provider=cert-manager", "networkPolicy.enabled=true"},
		{"monitoring.serviceMonitor.enabled=true", "decider.podDisruptionBudget.maxUnavailable=1"},
		{"webhook.enabled=false", "manager.metrics.enabled=false", "rbac.aggregatedRoles=false"},
	} {
		t.Run(strings.Join(append([]string{"values"}, set...), ","), func(t *testing.T) {
			vals := map[string]any{}
			for _, s := range set {
				if err := strvals.ParseInto(s, vals); err != nil {
					t.Fatal(err)
				}
			}
			msgs, err := Lint(chartDir, "", vals)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				t.Fatal("lint returned no messages at all; want at least its INFO about the icon, to show it ran")
			}
		})
	}
}

// Lint reports a broken chart: a template that does not render is an error.
func TestHelmLintFindsProblems(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "templates", "broken.yaml")
	if err := os.WriteFile(broken, []byte("kind: ConfigMap\nmetadata:\n  name: {{ .Values.nope.missing }}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Lint(dir, "", nil); err == nil || !strings.Contains(err.Error(), "broken.yaml") {
		t.Errorf("lint of a broken template: %v, want an error naming broken.yaml", err)
	}
}

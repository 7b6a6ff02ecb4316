package observability

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	_ "sigs.k8s.io/controller-runtime/pkg/webhook" // controller-runtime's webhook metrics

	// The controllers' and the webhooks' collectors join controller-runtime's registry (the
	// manager's /metrics) when their packages are imported, as in the tollgate binary.
	_ "github.com/tollgate-dev/tollgate/internal/controller"
	"github.com/tollgate-dev/tollgate/internal/decider"
	_ "github.com/tollgate-dev/tollgate/internal/webhook"
)

// exportedMetrics returns the names of every metric Tollgate's processes export, from their real
// registries: a decider's (the Server's registry with a decision log) and the manager's
// (controller-runtime's, which holds the controllers', the webhooks' and controller-runtime's own).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	srv := decider.NewServer(decider.NewStore(), decider.Options{
		DecisionLog: decider.NewDecisionLog(io.Discard, 0, false),
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	t.Cleanup(srv.Close)
	names := map[string]bool{}
	for _, c := range []prometheus.Collector{srv.MetricsRegistry(), metrics.Registry.(prometheus.Collector)} {
		for _, n := range describedNames(c) {
			names[n] = true
		}
	}
	if len(names) < 20 || !names["tollgate_decisions_total"] || !names["controller_runtime_webhook_latency_seconds"] {
		t.Fatalf("the registries describe too little: %v", slices.Sorted(maps.Keys(names)))
	}
	return names
}

var fqNameRE = regexp.MustCompile(`fqName: "([a-zA-Z_:][a-zA-Z0-9_:]*)"`)

// describedNames are the metric names a collector describes (a Registry describes every collector
// registered with it, vectors without series included).
func describedNames(c prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	var out []string
	for d := range ch {
		if m := fqNameRE.FindStringSubmatch(d.String()); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// selectorNames parses a PromQL expression with Prometheus's parser and returns the metric name of
// every vector selector in it.
func selectorNames(expr string) ([]string, error) {
	node, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" {
				name = m.Value
			}
		}
		names = append(names, name)
		return nil
	})
	return names, nil
}

// exported reports whether a name a query selects is exported: the name itself, or a histogram's
// _bucket, _sum or _count series (never of a counter).
func exported(names map[string]bool, name string) bool {
	if names[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && names[base] && !strings.HasSuffix(base, "_total") {
			return true
		}
	}
	return false
}

// checkQueries parses every query and fails for a syntax error or a metric Tollgate does not export.
// It returns the metric names used.
func checkQueries(t *testing.T, exportedNames map[string]bool, queries map[string]string) map[string]bool {
	t.Helper()
	used := map[string]bool{}
	for where, q := range queries {
		names, err := selectorNames(q)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", where, q, err)
			continue
		}
		if len(names) == 0 {
			t.Errorf("%s: %q selects no metric", where, q)
		}
		for _, n := range names {
			used[n] = true
			if !exported(exportedNames, n) {
				t.Errorf("%s: %q selects %s, which Tollgate does not export", where, q, n)
			}
		}
	}
	return used
}

// TestExportedHelpers checks the checkers themselves: they must refuse what they are there to refuse.
func TestExportedHelpers(t *testing.T) {
	names := map[string]bool{"tollgate_decision_duration_seconds": true, "tollgate_decisions_total": true}
	for name, want := range map[string]bool{
		"tollgate_decision_duration_seconds_bucket": true, "tollgate_decisions_total": true,
		"tollgate_decisions_total_bucket": false, "tollgate_decisons_total": false, "up": false,
	} {
		if got := exported(names, name); got != want {
			t.Errorf("exported(%s) = %v", name, got)
		}
	}
	got, err := selectorNames(`sum by (x) (rate(a_total{b="c"}[5m])) / on() group_left {__name__="b_total"} or vector(0)`)
	if err != nil || !slices.Equal(got, []string{"a_total", "b_total"}) {
		t.Errorf("selectorNames = %v, %v", got, err)
	}
	if _, err := selectorNames(`sum by (x) (rate(a_total[5m])`); err == nil {
		t.Error("an unbalanced query parses")
	}
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }

package observability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// dashboardPath is the dashboard's source; config/grafana holds a copy for kustomize.
const dashboardPath = "charts/tollgate/files/grafana/tollgate-dashboard.json"

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// grafanaVars are Grafana's interval variables, replaced by durations before parsing.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h")

var labelValuesRE = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// TestDashboard parses the Grafana dashboard, parses every query with Prometheus's PromQL parser and
// checks that each metric it selects is one Tollgate exports, that the panels the issue asks for are
// there, and that the kustomize copy is the same file.
func TestDashboard(t *testing.T) {
	root := testenv.RepoRoot()
	data, err := os.ReadFile(filepath.Join(root, dashboardPath))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard needs a uid and a title: %q %q", d.UID, d.Title)
	}

	queries := map[string]string{}
	titles := map[string]bool{}
	ids := map[int]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if prev, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			titles[p.Title] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q does not use the datasource variable", p.Title)
			}
			for _, tg := range p.Targets {
				queries[fmt.Sprintf("panel %q query %s", p.Title, tg.RefID)] = grafanaVars.Replace(tg.Expr)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValuesRE.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(metric, label)", v.Name, v.Definition)
			continue
		}
		queries["variable "+v.Name] = m[1]
	}

	used := checkQueries(t, exportedMetrics(t), queries)
	t.Logf("%d queries over %d metrics in %d panels", len(queries), len(used), len(ids))

	// The panels the dashboard exists for.
	for _, want := range []string{"Decisions/s by outcome", "Decisions/s by outcome and reason code", "Top denied passports",
		"Top denied tools", "Decision latency percentiles", "Bundle revision per decider", "Bundle age per decider",
		"Suspended passports", "Webhook latency", "Webhook errors"} {
		if !titles[want] {
			t.Errorf("no panel %q", want)
		}
	}

	// kustomize ships a copy (a configMapGenerator cannot read files outside its directory).
	cp, err := os.ReadFile(filepath.Join(root, "config", "grafana", "tollgate-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cp, data) {
		t.Errorf("config/grafana/tollgate-dashboard.json differs from %s: cp %s config/grafana/tollgate-dashboard.json", dashboardPath, dashboardPath)
	}
}

// TestCheckQueriesRefusesUnknownMetrics makes sure the dashboard check can fail: a query for a
// metric no registry describes, and one that does not parse, are both reported.
func TestCheckQueriesRefusesUnknownMetrics(t *testing.T) {
	names := exportedMetrics(t)
	for q, wantOK := range map[string]bool{
		`sum(rate(tollgate_decisions_total[5m]))`:                                      true,
		`histogram_quantile(0.9, rate(tollgate_decision_duration_seconds_bucket[5m]))`: true,
		`sum(rate(tollgate_decisions_count_total[5m]))`:                                false,
		`tollgate_passport_denials_total_bucket`:                                       false,
	} {
		sel, err := selectorNames(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		ok := true
		for _, n := range sel {
			ok = ok && exported(names, n)
		}
		if ok != wantOK {
			t.Errorf("%s: exported = %v, want %v", q, ok, wantOK)
		}
	}
}

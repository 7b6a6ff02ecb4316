package main

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/stats"
)

func TestStageOrders(t *testing.T) {
	a, b := slices.Clone(stageNames), slices.Clone(tableOrder)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Fatalf("stageNames %v and tableOrder %v must list the same stages", stageNames, tableOrder)
	}
}

func TestGrowth(t *testing.T) {
	if growth(10, 3) != 7 || growth(3, 10) != 0 {
		t.Fatal("growth is wrong")
	}
}

func TestBatchBody(t *testing.T) {
	body, err := batchBody(len(requestMix)+2, 1)
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Requests []map[string]any `json:"requests"`
	}
	if err := json.Unmarshal(body, &b); err != nil || len(b.Requests) != len(requestMix)+2 {
		t.Fatalf("batch body %s: %v", body, err)
	}
	for i, r := range b.Requests { // the mix, round-robin from offset 1
		var want map[string]any
		if err := json.Unmarshal([]byte(requestMix[(i+1)%len(requestMix)].body), &want); err != nil {
			t.Fatal(err)
		}
		if r["call_id"] != want["call_id"] {
			t.Errorf("request %d is %v, want %v", i, r, want)
		}
	}
}

func TestPropagationRows(t *testing.T) {
	lat := make(stats.Latencies, 0, 100)
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	rows := propagationRows("p", "change", lat, float64(500*time.Millisecond))
	if len(rows) != 2 {
		t.Fatalf("got %d rows", len(rows))
	}
	p50, p99 := rows[0], rows[1]
	if p50.Median != float64(50*time.Millisecond) || p99.Median != float64(99*time.Millisecond) {
		t.Errorf("p50 %v, p99 %v", p50.Median, p99.Median)
	}
	if p99.Min != float64(time.Millisecond) || p99.Max != float64(100*time.Millisecond) || p99.Runs != 100 {
		t.Errorf("range %v–%v over %d", p99.Min, p99.Max, p99.Runs)
	}
	if p50.Target != nil || p99.Target == nil || p99.Met == nil || !*p99.Met {
		t.Errorf("only p99 has a target, and 99 ms meets 500 ms: %+v %+v", p50, p99)
	}
}

func TestHTTPRows(t *testing.T) {
	runs := []*loadRun{
		{id: "max", name: "single, max throughput", perCall: 1, rates: []float64{25000, 21000, 19000}, cpu: []float64{1, 1, 0.5}, client: []float64{1, 1, 1}},
		{id: "fixed", name: "single @ 5,000/s", perCall: 1, rate: 5000,
			p50: []float64{1e5, 2e5, 3e5}, p99: []float64{1e6, 3e6, 1.5e6}, p999: []float64{4e6, 5e6, 6e6},
			sentP99: []float64{5e5, 7e5, 6e5}},
	}
	rows := httpRows(runs, 3)
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	want := []string{"max.decisions_per_second", "max.decisions_per_server_cpu_second", "fixed.p50", "fixed.p99", "fixed.p99.9", "fixed.p99_from_actual_send"}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	if rows[0].Median != 21000 || rows[0].Met == nil || !*rows[0].Met {
		t.Errorf("max row: %+v", rows[0])
	}
	if rows[1].Median != 25000 { // per CPU-second: 25000, 21000, 38000
		t.Errorf("per CPU-second median = %v, want 25000", rows[1].Median)
	}
	if rows[3].Median != 1.5e6 || rows[3].Met == nil || !*rows[3].Met {
		t.Errorf("p99 row: %+v", rows[3])
	}
	if rows[5].Median != 6e5 || rows[5].Target != nil {
		t.Errorf("p99 from actual send: median %v, want 6e5 and no target: %+v", rows[5].Median, rows[5])
	}
}

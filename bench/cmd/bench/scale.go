package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/tollgate-dev/tollgate/bench/internal/report"
	"github.com/tollgate-dev/tollgate/bench/internal/stats"
	"github.com/tollgate-dev/tollgate/internal/bundlestore"
	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy/policytest"
)

// benchScale measures the stored size of the large bundle (bundlestore encoding) and the heap a
// decider Store holds after loading it.
func benchScale(ctx context.Context, cfg config) ([]report.Row, []string, error) {
	bundle := policytest.LargeBundle(largePassports, largePolicies)
	raw, err := json.Marshal(bundle)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the large bundle as JSON: %w", err)
	}
	cms, err := bundlestore.Encode("tollgate-system", bundle)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the large bundle for storage: %w", err)
	}
	var gz int
	for _, cm := range cms {
		gz += len(cm.BinaryData[bundlestore.DataKey])
	}
	one := func(v float64) stats.Summary { return stats.Summarize([]float64{v}) }

	var heap []float64
	for run := range cfg.runs {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("scale benchmark: %w", err)
		}
		// Decode what the controllers stored and load it, as a decider does; what stays on the heap
		// once the decoded bundle is dropped is the decider's cost.
		store := decider.NewStore()
		runtime.GC()
		base := heapObjectBytes()
		decoded, err := bundlestore.Decode(cms)
		if err != nil {
			return nil, nil, fmt.Errorf("decoding the stored bundle: %w", err)
		}
		if err := store.Load(decoded); err != nil {
			return nil, nil, fmt.Errorf("loading the large bundle: %w", err)
		}
		decoded.Passports, decoded.Policies = nil, nil // the decider drops the decoded bundle too
		runtime.GC()
		g := growth(heapObjectBytes(), base)
		runtime.KeepAlive(store)
		heap = append(heap, float64(g))
		progress("scale run %d/%d: decider heap +%d MiB after loading", run+1, cfg.runs, g>>20)
	}
	rows := []report.Row{
		{ID: "scale.bundle.json_bytes", Name: "4. Bundle JSON, 10,000 passports + 1,000 policies", Unit: report.UnitBytes,
			Summary: one(float64(len(raw))), Over: "deterministic"},
		{ID: "scale.bundle.gzip_bytes", Name: "4. Bundle stored (gzip, bundlestore)", Unit: report.UnitBytes,
			Summary: one(float64(gz)), Over: "deterministic"},
		{ID: "scale.bundle.shards", Name: "4. Bundle ConfigMap shards", Unit: report.UnitCount,
			Summary: one(float64(len(cms))), Over: "deterministic",
			Note: fmt.Sprintf("≤ %d KiB each", bundlestore.MaxShardBytes>>10)},
		{ID: "scale.decider.heap_bytes", Name: "4. Decider heap in use after decode + Store.Load", Unit: report.UnitBytes,
			Summary: stats.Summarize(heap), Over: fmt.Sprintf("%d runs", len(heap))},
	}
	return rows, nil, nil
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/tollgate-dev/tollgate/bench/internal/report"
	"github.com/tollgate-dev/tollgate/bench/internal/stats"
	"github.com/tollgate-dev/tollgate/internal/bundlestore"
	"github.com/tollgate-dev/tollgate/internal/policy/policytest"
)

// benchScale measures the stored size of the large bundle (bundlestore encoding) and the heap a
// decider Store holds after loading it.
// deterministic is the range label of figures that do not vary between runs.
const deterministic = "deterministic"

// serverMemory runs benchserver -memory-report, with or without the large bundle.
func serverMemory(ctx context.Context, cfg config, large bool) (memReport, error) {
	args := []string{"-f", filepath.Join(cfg.root, "config", "samples"), "-memory-report"}
	if large {
		args = append(args, "-large-passports", strconv.Itoa(largePassports), "-large-policies", strconv.Itoa(largePolicies))
	}
	cmd := exec.CommandContext(ctx, cfg.serverBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return memReport{}, fmt.Errorf("benchserver -memory-report: %w: %s", err, stderr.String())
	}
	var m memReport
	if err := json.Unmarshal(out, &m); err != nil {
		return memReport{}, fmt.Errorf("reading the memory report %q: %w", out, err)
	}
	return m, nil
}

// memReport is benchserver's -memory-report line.
type memReport struct {
	HeapAlloc uint64 `json:"heap_alloc"`
	HeapInuse uint64 `json:"heap_inuse"`
}

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

	var heap, inuse []float64
	base, err := serverMemory(ctx, cfg, false)
	if err != nil {
		return nil, nil, err
	}
	for run := range cfg.runs {
		m, err := serverMemory(ctx, cfg, true)
		if err != nil {
			return nil, nil, err
		}
		heap = append(heap, float64(m.HeapAlloc))
		inuse = append(inuse, float64(m.HeapInuse))
		progress("scale run %d/%d: decider heap %d MiB live, %d MiB in use", run+1, cfg.runs, m.HeapAlloc>>20, m.HeapInuse>>20)
	}
	rows := []report.Row{
		{ID: "scale.bundle.json_bytes", Name: "4. Bundle JSON, 10,000 passports + 1,000 policies", Unit: report.UnitBytes,
			Summary: one(float64(len(raw))), Over: deterministic},
		{ID: "scale.bundle.gzip_bytes", Name: "4. Bundle stored (gzip, bundlestore)", Unit: report.UnitBytes,
			Summary: one(float64(gz)), Over: deterministic},
		{ID: "scale.bundle.shards", Name: "4. Bundle ConfigMap shards", Unit: report.UnitCount,
			Summary: one(float64(len(cms))), Over: deterministic,
			Note: fmt.Sprintf("≤ %d KiB each", bundlestore.MaxShardBytes>>10)},
		{ID: "scale.decider.heap_live_bytes", Name: "4. Decider process heap, live after GC", Unit: report.UnitBytes,
			Summary: stats.Summarize(heap), Over: fmt.Sprintf("%d runs", len(heap)),
			Note: "samples only: " + report.FormatValue(float64(base.HeapAlloc), report.UnitBytes)},
		{ID: "scale.decider.heap_inuse_bytes", Name: "4. Decider process heap in use (spans)", Unit: report.UnitBytes,
			Summary: stats.Summarize(inuse), Over: fmt.Sprintf("%d runs", len(inuse))},
	}
	notes := []string{"Scale: the large bundle (policytest.LargeBundle) encoded by internal/bundlestore as the controllers store it; " +
		"decider memory measured in a fresh benchserver process that decodes it from the ConfigMaps and loads it into a Store beside the samples (runtime.MemStats after a full GC)."}
	return rows, notes, nil
}

// Package stats computes the summaries the benchmark reports: percentiles of latency samples and
// the median with min and max of repeated runs.
package stats

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 ≤ p ≤ 100) of sorted by the nearest-rank method: the
// smallest sample such that at least p percent of the samples are ≤ it. It returns 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Latencies holds latency samples; Sort must be called before Percentile.
type Latencies []time.Duration

// Sort sorts the samples in place and returns them.
func (l Latencies) Sort() Latencies {
	slices.Sort(l)
	return l
}

// Percentile returns the p-th percentile of the (sorted) samples.
func (l Latencies) Percentile(p float64) time.Duration { return Percentile(l, p) }

// Summary is the median, minimum and maximum of repeated measurements of one figure.
type Summary struct {
	// Median is the median (the mean of the two middle values for an even count).
	Median float64 `json:"median"`
	// Min and Max are the extremes.
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	// Runs is the number of measurements.
	Runs int `json:"runs"`
}

// Summarize returns the Summary of values (the zero Summary for none).
func Summarize(values []float64) Summary {
	if len(values) == 0 {
		return Summary{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return Summary{Median: med, Min: v[0], Max: v[n-1], Runs: n}
}

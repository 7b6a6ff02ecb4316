package stats

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	hundred := make(Latencies, 0, 100)
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, ms(i))
	}
	hundred.Sort()
	tests := []struct {
		name    string
		samples Latencies
		p       float64
		want    time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single p0", Latencies{ms(7)}, 0, ms(7)},
		{"single p99.9", Latencies{ms(7)}, 99.9, ms(7)},
		{"p50 of 1..100", hundred, 50, ms(50)},
		{"p99 of 1..100", hundred, 99, ms(99)},
		{"p99.9 of 1..100", hundred, 99.9, ms(100)},
		{"p100 of 1..100", hundred, 100, ms(100)},
		{"p0 of 1..100", hundred, 0, ms(1)},
		{"p50 of two", Latencies{ms(1), ms(3)}, 50, ms(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.samples.Percentile(tt.p); got != tt.want {
				t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want Summary
	}{
		{"none", nil, Summary{}},
		{"odd", []float64{5, 1, 3}, Summary{Median: 3, Min: 1, Max: 5, Runs: 3}},
		{"even", []float64{4, 1, 2, 3}, Summary{Median: 2.5, Min: 1, Max: 4, Runs: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			if got := Summarize(tt.in); got != tt.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.in[i] {
					t.Fatalf("Summarize modified its input")
				}
			}
		})
	}
}

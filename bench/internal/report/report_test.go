package report

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/bench/internal/stats"
)

func TestFormatValue(t *testing.T) {
	tests := []struct {
		v    float64
		unit string
		want string
	}{
		{412.4, UnitNanos, "412 ns"},
		{3.14159, UnitNanos, "3.14 ns"},
		{1234, UnitNanos, "1.23 µs"},
		{12_345_678, UnitNanos, "12.3 ms"},
		{2.5e9, UnitNanos, "2.50 s"},
		{512, UnitBytes, "512 B"},
		{3 << 20, UnitBytes, "3.00 MiB"},
		{150 << 10, UnitBytes, "150 KiB"},
		{21340.4, UnitPerSecond, "21,340/s"},
		{999, UnitPerSecond, "999/s"},
		{1_000_000, UnitCount, "1,000,000"},
		{2, "x", "2.00 x"},
	}
	for _, tt := range tests {
		if got := FormatValue(tt.v, tt.unit); got != tt.want {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", tt.v, tt.unit, got, tt.want)
		}
	}
}

func TestTargetMet(t *testing.T) {
	if !(Target{Op: AtMost, Value: 1}).Met(1) || (Target{Op: AtMost, Value: 1}).Met(1.01) {
		t.Error("AtMost is wrong")
	}
	if !(Target{Op: AtLeast, Value: 1}).Met(1) || (Target{Op: AtLeast, Value: 1}).Met(0.99) {
		t.Error("AtLeast is wrong")
	}
}

func TestTable(t *testing.T) {
	rows := []Row{
		Row{ID: "a", Name: "Decide, 100 rules", Unit: UnitNanos, Summary: stats.Summary{Median: 500, Min: 450, Max: 700, Runs: 5}, Over: "5 runs"}.
			WithTarget(Target{Op: AtMost, Value: 1000}),
		Row{ID: "b", Name: "throughput", Unit: UnitPerSecond, Summary: stats.Summary{Median: 15000, Min: 14000, Max: 16000, Runs: 5}}.
			WithTarget(Target{Op: AtLeast, Value: 20000}),
		{ID: "c", Name: "bundle size", Unit: UnitBytes, Summary: stats.Summary{Median: 2048, Min: 2048, Max: 2048, Runs: 1}, Note: "gzip"},
	}
	got := Table(rows)
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("got %d lines, want 5:\n%s", len(lines), got)
	}
	width := utf8.RuneCountInString(lines[0])
	for i, l := range lines {
		if utf8.RuneCountInString(l) != width {
			t.Errorf("line %d is %d runes wide, want %d: %q", i, utf8.RuneCountInString(l), width, l)
		}
		if !strings.HasPrefix(l, "|") || !strings.HasSuffix(l, "|") {
			t.Errorf("line %d is not a table row: %q", i, l)
		}
	}
	for _, want := range []string{"| Decide, 100 rules ", "500 ns", "450 ns – 700 ns (5 runs)", "≤ 1.00 µs", "| met ",
		"≥ 20,000/s", "MISSED", "bundle size (gzip)", "2.00 KiB"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

func TestResultsJSON(t *testing.T) {
	r := Results{Machine: Machine{CPU: "x", Cores: 2}, Rows: []Row{
		Row{ID: "a", Unit: UnitNanos, Summary: stats.Summary{Median: 2, Min: 1, Max: 3, Runs: 3}}.WithTarget(Target{Op: AtMost, Value: 1}),
	}}
	data, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"op": "<="`) || !strings.HasSuffix(string(data), "}\n") {
		t.Errorf("JSON not readable:\n%s", data)
	}
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	row := back["rows"].([]any)[0].(map[string]any)
	if row["median"] != 2.0 || row["met"] != false || row["target"].(map[string]any)["op"] != "<=" {
		t.Errorf("unexpected row JSON: %v", row)
	}
}

func TestReplaceSection(t *testing.T) {
	tests := []struct {
		name, doc, want string
		wantErr         bool
	}{
		{
			name: "replace existing",
			doc:  "# T\n\n" + SectionStart + "\nold\n" + SectionEnd + "\n\n## Testing\n",
			want: "# T\n\n" + SectionStart + "\nnew\n" + SectionEnd + "\n\n## Testing\n",
		},
		{
			name: "insert before testing",
			doc:  "# T\n\nintro\n\n## Testing\n\nrun it\n",
			want: "# T\n\nintro\n\n" + SectionStart + "\nnew\n" + SectionEnd + "\n\n## Testing\n\nrun it\n",
		},
		{
			name: "append",
			doc:  "# T\n",
			want: "# T\n\n" + SectionStart + "\nnew\n" + SectionEnd + "\n",
		},
		{name: "one marker", doc: "# T\n" + SectionEnd + "\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReplaceSection(tt.doc, "new\n")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

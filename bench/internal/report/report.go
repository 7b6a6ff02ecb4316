// Package report formats benchmark results: one table of figures beside their targets (Markdown,
// readable on a terminal too), the machine-readable JSON, and the README section that quotes them.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/bench/internal/stats"
)

// Units of Row values. Values are stored in the base unit and scaled when formatted.
const (
	// UnitNanos is a duration in nanoseconds (shown as ns, µs, ms or s).
	UnitNanos = "ns"
	// UnitBytes is a size in bytes (shown as B, KiB or MiB).
	UnitBytes = "bytes"
	// UnitPerSecond is a rate per second.
	UnitPerSecond = "per_second"
	// UnitCount is a plain count.
	UnitCount = "count"
)

// Comparison operators of targets.
const (
	AtMost  = "<="
	AtLeast = ">="
)

// Target is the value a figure must stay within.
type Target struct {
	// Op is AtMost or AtLeast.
	Op string `json:"op"`
	// Value is the bound, in the row's unit.
	Value float64 `json:"value"`
	// Label describes a derived bound, e.g. "2× (a)"; empty for a plain number.
	Label string `json:"label,omitempty"`
}

// Met reports whether v satisfies the target.
func (t Target) Met(v float64) bool {
	if t.Op == AtLeast {
		return v >= t.Value
	}
	return v <= t.Value
}

// Row is one figure of the table.
type Row struct {
	// ID is a stable key for machines, e.g. "engine.decide.name_rules_100".
	ID string `json:"id"`
	// Name is the human label.
	Name string `json:"name"`
	// Unit is one of the Unit constants.
	Unit string `json:"unit"`
	// Summary is the median with min and max over runs (or, for per-trial figures, over trials).
	stats.Summary
	// Over says what the min–max ranges over, e.g. "5 runs" or "60 trials".
	Over string `json:"over"`
	// Target is the bound the figure must meet, nil when it has none.
	Target *Target `json:"target,omitempty"`
	// Met is set when Target is.
	Met *bool `json:"met,omitempty"`
	// Note is a short remark shown after the name.
	Note string `json:"note,omitempty"`
}

// WithTarget returns r with its target set and Met computed from the median.
func (r Row) WithTarget(t Target) Row {
	r.Target = &t
	met := t.Met(r.Median)
	r.Met = &met
	return r
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Distro    string `json:"distro,omitempty"`
	Kernel    string `json:"kernel,omitempty"`
	Arch      string `json:"arch"`
}

// String returns a one-line description.
func (m Machine) String() string {
	s := fmt.Sprintf("%s, %d cores, %s, %s/%s", m.CPU, m.Cores, m.GoVersion, m.OS, m.Arch)
	if m.Distro != "" {
		s += ", " + m.Distro
	}
	if m.Kernel != "" {
		s += ", kernel " + m.Kernel
	}
	return s
}

// Results is everything one benchmark run measured (the content of bench/results.json).
type Results struct {
	Machine  Machine   `json:"machine"`
	Started  time.Time `json:"started"`
	Duration string    `json:"duration"`
	// LoadAverage is the 1-minute load average at the start and at the end of the run.
	LoadAverage [2]float64 `json:"load_average"`
	Rows        []Row      `json:"rows"`
	Notes       []string   `json:"notes,omitempty"`
}

// JSON returns the results as indented JSON with a trailing newline.
func (r Results) JSON() ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep "<=" readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encoding results: %w", err)
	}
	return []byte(b.String()), nil
}

// FormatValue formats v of unit for humans, e.g. 1234 ns → "1.23 µs", 21340 per second → "21,340/s".
func FormatValue(v float64, unit string) string {
	switch unit {
	case UnitNanos:
		return formatNanos(v)
	case UnitBytes:
		switch {
		case v >= 1<<20:
			return sig3(v/(1<<20)) + " MiB"
		case v >= 1<<10:
			return sig3(v/(1<<10)) + " KiB"
		default:
			return strconv.FormatFloat(v, 'f', 0, 64) + " B"
		}
	case UnitPerSecond:
		return thousands(int64(math.Round(v))) + "/s"
	case UnitCount:
		return thousands(int64(math.Round(v)))
	default:
		return sig3(v) + " " + unit
	}
}

func formatNanos(v float64) string {
	switch {
	case v >= 1e9:
		return sig3(v/1e9) + " s"
	case v >= 1e6:
		return sig3(v/1e6) + " ms"
	case v >= 1e3:
		return sig3(v/1e3) + " µs"
	default:
		return sig3(v) + " ns"
	}
}

// sig3 formats v with three significant digits (at least the integer part).
func sig3(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// thousands formats n with comma separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func (r Row) cells() []string {
	name := r.Name
	if r.Note != "" {
		name += " (" + r.Note + ")"
	}
	rng := FormatValue(r.Min, r.Unit) + " – " + FormatValue(r.Max, r.Unit)
	if r.Over == "1 runs" {
		r.Over = "1 run"
	}
	if r.Over != "" {
		rng += " (" + r.Over + ")"
	}
	target, status := "–", "–"
	if r.Target != nil {
		op := "≤"
		if r.Target.Op == AtLeast {
			op = "≥"
		}
		target = op + " " + FormatValue(r.Target.Value, r.Unit)
		if r.Target.Label != "" {
			target = op + " " + r.Target.Label + " = " + FormatValue(r.Target.Value, r.Unit)
		}
		status = "MISSED"
		if r.Met != nil && *r.Met {
			status = "met"
		}
	}
	return []string{name, FormatValue(r.Median, r.Unit), rng, target, status}
}

// Table returns the rows as one Markdown table with aligned columns.
func Table(rows []Row) string {
	header := []string{"Measurement", "Median", "Min – max", "Target", "Status"}
	all := make([][]string, 0, 1+len(rows))
	all = append(all, header)
	for _, r := range rows {
		all = append(all, r.cells())
	}
	widths := make([]int, len(header))
	for _, cells := range all {
		for i, c := range cells {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i, c := range cells {
			b.WriteString(" " + c + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)) + " |")
		}
		b.WriteString("\n")
	}
	line(header)
	b.WriteString("|")
	for _, w := range widths {
		b.WriteString(strings.Repeat("-", w+2) + "|")
	}
	b.WriteString("\n")
	for _, cells := range all[1:] {
		line(cells)
	}
	return b.String()
}

// Text returns the machine line, the table and the notes, as printed by the benchmark.
func (r Results) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s. Run started %s, took %s; 1-minute load average %.1f at the start, %.1f at the end.\n\n",
		r.Machine, r.Started.UTC().Format(time.RFC3339), r.Duration, r.LoadAverage[0], r.LoadAverage[1])
	b.WriteString(Table(r.Rows))
	if len(r.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range r.Notes {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}

// README section markers.
const (
	SectionStart = "<!-- performance:start -->"
	SectionEnd   = "<!-- performance:end -->"
)

// ReplaceSection returns doc with the text between SectionStart and SectionEnd replaced by body.
// When the markers are missing they are added before the "## Testing" heading, or at the end.
func ReplaceSection(doc, body string) (string, error) {
	block := SectionStart + "\n" + strings.TrimRight(body, "\n") + "\n" + SectionEnd
	start := strings.Index(doc, SectionStart)
	end := strings.Index(doc, SectionEnd)
	switch {
	case start >= 0 && end > start:
		return doc[:start] + block + doc[end+len(SectionEnd):], nil
	case start >= 0 || end >= 0:
		return "", errors.New("README has only one of the performance markers, or they are out of order")
	}
	if i := strings.Index(doc, "\n## Testing"); i >= 0 {
		return doc[:i+1] + block + "\n\n" + doc[i+1:], nil
	}
	return strings.TrimRight(doc, "\n") + "\n\n" + block + "\n", nil
}

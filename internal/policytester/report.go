package policytester

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes a human-readable table of the results, the file errors and a summary line.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tTEST\tCASE\tDECISION\tCODE\tDETAIL")
	for _, res := range r.Results {
		status, decision, code := "PASS", "-", "-"
		if !res.Pass {
			status = "FAIL"
		}
		if res.Got != nil {
			decision, code = res.Got.Decision, res.Got.Code
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", status, res.Test, res.Case, decision, code, strings.Join(res.Failures, "; "))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	for _, e := range r.Errors {
		name := e.File
		if e.Test != "" {
			name += " (test " + e.Test + ")"
		}
		fmt.Fprintf(w, "\nERROR %s:\n  %s\n", name, strings.ReplaceAll(e.Error, "\n", "\n  "))
	}
	summary := fmt.Sprintf("\n%d passed, %d failed", r.Passed, r.Failed)
	if len(r.Errors) > 0 {
		summary += fmt.Sprintf(", %d errors", len(r.Errors))
	}
	_, err := fmt.Fprintln(w, summary)
	return err
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

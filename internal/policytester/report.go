package policytester

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
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

// JUnit XML (the Ant/Surefire format that Jenkins, GitLab, GitHub test reporters and most CI
// systems read; testdata/junit-10.xsd is the schema the tests validate it against): one testsuite
// per test, one testcase per case, a failure per failed case and an error per test that could not
// run.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	File     string      `xml:"file,attr,omitempty"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitSeconds formats d as JUnit's time: seconds with millisecond precision.
func junitSeconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// location is "file:line" (or the file alone when the line is unknown).
func location(file string, line int) string {
	if line > 0 {
		return file + ":" + strconv.Itoa(line)
	}
	return file
}

// WriteJUnit writes the report as JUnit XML.
func (r *Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{Name: "tollgate test"}
	var total time.Duration
	index := map[[2]string]int{} // (file, test) → suite
	durations := map[int]time.Duration{}
	suite := func(file, test string) int {
		k := [2]string{file, test}
		i, ok := index[k]
		if !ok {
			i = len(out.Suites)
			index[k] = i
			name := test
			if name == "" {
				name = file
			}
			out.Suites = append(out.Suites, junitSuite{Name: name, File: file})
		}
		return i
	}
	for _, res := range r.Results {
		si := suite(res.File, res.Test)
		s := &out.Suites[si]
		c := junitCase{Name: res.Case, Classname: res.Test, Time: junitSeconds(res.Duration)}
		if !res.Pass {
			text := location(res.File, res.Line) + ": case " + strconv.Quote(res.Case) + "\n" + strings.Join(res.Failures, "\n")
			if res.Got != nil {
				text += fmt.Sprintf("\ngot: %s %s %s", res.Got.Decision, res.Got.Code, res.Got.PolicyID)
			}
			c.Failure = &junitProblem{Message: strings.Join(res.Failures, "; "), Type: "tollgate.expectation", Text: text}
			s.Failures++
			out.Failures++
		}
		s.Tests++
		out.Tests++
		s.Cases = append(s.Cases, c)
		durations[si] += res.Duration
		total += res.Duration
	}
	for _, e := range r.Errors {
		s := &out.Suites[suite(e.File, e.Test)]
		s.Cases = append(s.Cases, junitCase{Name: "load", Classname: s.Name, Time: junitSeconds(0),
			Error: &junitProblem{Message: firstLine(e.Error), Type: "tollgate.load", Text: e.File + ": " + e.Error}})
		s.Tests++
		s.Errors++
		out.Tests++
		out.Errors++
	}
	for i := range out.Suites {
		out.Suites[i].Time = junitSeconds(durations[i])
	}
	out.Time = junitSeconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// WriteGitHub writes GitHub Actions workflow commands: an ::error annotation at the file and line
// of every failed case and every file that could not run, then the summary line.
func (r *Report) WriteGitHub(w io.Writer) error {
	var b strings.Builder
	for _, res := range r.Results {
		if res.Pass {
			continue
		}
		props := "file=" + ghProperty(res.File)
		if res.Line > 0 {
			props += ",line=" + strconv.Itoa(res.Line)
		}
		props += ",title=" + ghProperty("tollgate test "+res.Test+": "+res.Case)
		msg := "case " + strconv.Quote(res.Case) + " failed: " + strings.Join(res.Failures, "; ")
		b.WriteString("::error " + props + "::" + ghData(msg) + "\n")
	}
	for _, e := range r.Errors {
		title := "tollgate test: cannot run"
		if e.Test != "" {
			title = "tollgate test " + e.Test + ": cannot run"
		}
		b.WriteString("::error file=" + ghProperty(e.File) + ",title=" + ghProperty(title) + "::" + ghData(e.Error) + "\n")
	}
	summary := fmt.Sprintf("%d passed, %d failed", r.Passed, r.Failed)
	if len(r.Errors) > 0 {
		summary += fmt.Sprintf(", %d errors", len(r.Errors))
	}
	b.WriteString(summary + "\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

// ghData escapes a workflow command's message (%, CR, LF).
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value (also : and ,).
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

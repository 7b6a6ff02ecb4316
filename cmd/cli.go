package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/policytest"
)

// Exit statuses of the offline subcommands.
const (
	exitFailed = 1 // invalid input, failed tests, failed demo step
	exitUsage  = 2 // bad flags or arguments
)

// exitError carries the exit status a subcommand chose (see exitCoder in main.go).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode returns the process exit status.
func (e *exitError) ExitCode() int { return e.code }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// errHelpShown ends a subcommand successfully after -h printed its usage.
var errHelpShown = errors.New("help shown")

// pathList is a repeatable flag; each value may also hold comma-separated paths.
type pathList []string

func (p *pathList) String() string { return strings.Join(*p, ",") }

func (p *pathList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*p = append(*p, s)
		}
	}
	return nil
}

// newFlagSet returns a flag set writing its usage to stderr.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("tollgate "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: tollgate %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses flags anywhere among the arguments and returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelpShown
			}
			return nil, &exitError{code: exitUsage, err: err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// helpOK turns errHelpShown into success.
func helpOK(err error) error {
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

// runEval decides one request against manifest files and prints the decision JSON as the decision
// endpoint would. The exit status is 0 whatever the decision.
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval", "-f PATH... [--request REQ.json|-] [flags]", stderr)
	var files pathList
	fs.Var(&files, "f", "GuardrailPolicy/AgentPassport manifest file or directory (repeatable; YAML or JSON)")
	fs.Var(&files, "filename", "same as -f")
	reqPath := fs.String("request", "-", "decision request file (JSON or YAML); - reads stdin")
	namespace := fs.String("namespace", "", "namespace of bare passport names (default: the one namespace holding the passport)")
	pretty := fs.Bool("pretty", false, "indent the decision JSON")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return helpOK(err)
	}
	files = append(files, rest...)
	if len(files) == 0 {
		fs.Usage()
		return usageError("no manifests: give -f PATH (a file or directory of GuardrailPolicy and AgentPassport manifests)")
	}
	set, err := manifest.Load(files...)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	ep, err := policytest.NewEndpoint(set, *namespace)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	var raw []byte
	if *reqPath == "-" {
		if fi, serr := os.Stdin.Stat(); serr == nil && fi.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintln(stderr, "reading the decision request from stdin (end with Ctrl-D)...")
		}
		raw, err = io.ReadAll(os.Stdin)
	} else {
		raw, err = os.ReadFile(*reqPath)
	}
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("reading the request: %w", err)}
	}
	body, err := policytest.RequestJSON(raw)
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s: %w", requestName(*reqPath), err)}
	}
	_, out, err := ep.Decide(ctx, body)
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s: %w", requestName(*reqPath), err)}
	}
	if *pretty {
		var buf bytes.Buffer
		if err := json.Indent(&buf, out, "", "  "); err == nil {
			out = buf.Bytes()
		}
	}
	if _, err := stdout.Write(out); err != nil {
		return fmt.Errorf("writing the decision: %w", err)
	}
	return nil
}

func requestName(p string) string {
	if p == "-" {
		return "request (stdin)"
	}
	return "request " + p
}

// runTest runs policy test files and reports a table (or JSON); the exit status is 1 when any case
// fails or any test cannot run.
func runTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("test", "PATH... [-o table|json]", stderr)
	output := fs.String("o", "table", "output format: table or json")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return helpOK(err)
	}
	if *output != "table" && *output != "json" {
		return usageError("-o %q: want table or json", *output)
	}
	if len(paths) == 0 {
		fs.Usage()
		return usageError("no test paths: give test files or directories holding them")
	}
	rep, err := policytest.Run(ctx, paths...)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	if *output == "json" {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteTable(stdout)
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return &exitError{code: exitFailed, err: fmt.Errorf("%d of %d cases failed, %d tests could not run",
			rep.Failed, rep.Failed+rep.Passed, len(rep.Errors))}
	}
	return nil
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/policytester"
)

// evalCommand decides one request against manifest files and prints the decision JSON as the
// decision endpoint would. The exit status is 0 whatever the decision.
type evalCommand struct {
	manifests        manifestOptions
	request          string
	defaultNamespace string
	pretty           bool
}

func newEvalCommand() command { return &evalCommand{request: "-"} }

// BindFlags registers eval's flags.
func (c *evalCommand) BindFlags(fs *flag.FlagSet) {
	c.manifests.BindFlags(fs)
	fs.StringVar(&c.request, "request", c.request, "decision request file (JSON or YAML); - reads stdin")
	bindDefaultNamespace(fs, &c.defaultNamespace, "the one namespace holding the passport")
	fs.BoolVar(&c.pretty, "pretty", c.pretty, "indent the decision JSON")
	deprecatedAliases(fs, alias{"namespace", "default-namespace"})
}

// Run decides the request.
func (c *evalCommand) Run(ctx context.Context, cio *cmdIO, args []string) error {
	files, err := c.manifests.paths(cio, args)
	if err != nil {
		return err
	}
	set, err := manifest.Load(files...)
	if err != nil {
		return err
	}
	svc, err := decider.NewManifestService(set, c.defaultNamespace)
	if err != nil {
		return err
	}
	raw, err := c.readRequest(cio)
	if err != nil {
		return err
	}
	body, err := decider.RequestJSON(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", requestName(c.request), err)
	}
	_, out, err := svc.DecideJSON(ctx, body, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", requestName(c.request), err)
	}
	if c.pretty {
		var buf bytes.Buffer
		if err := json.Indent(&buf, out, "", "  "); err == nil {
			out = buf.Bytes()
		}
	}
	if _, err := cio.stdout.Write(out); err != nil {
		return fmt.Errorf("writing the decision: %w", err)
	}
	return nil
}

// readRequest reads --request, or stdin for "-" (saying so when stdin is a terminal).
func (c *evalCommand) readRequest(cio *cmdIO) ([]byte, error) {
	var raw []byte
	var err error
	if c.request == "-" {
		if f, ok := cio.stdin.(*os.File); ok {
			if fi, serr := f.Stat(); serr == nil && fi.Mode()&os.ModeCharDevice != 0 {
				fmt.Fprintln(cio.stderr, "reading the decision request from stdin (end with Ctrl-D)...")
			}
		}
		raw, err = io.ReadAll(cio.stdin)
	} else {
		raw, err = os.ReadFile(c.request)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	return raw, nil
}

func requestName(p string) string {
	if p == "-" {
		return "request (stdin)"
	}
	return "request " + p
}

// testCommand runs policy test files and reports a table, JSON, JUnit XML or GitHub workflow
// annotations; the exit status is 1 when any case fails or any test cannot run.
type testCommand struct {
	output string
}

func newTestCommand() command { return &testCommand{output: "table"} }

// BindFlags registers test's flags.
func (c *testCommand) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.output, "o", c.output, "output format: table, json, junit (JUnit XML) or github (GitHub Actions ::error annotations at each failing case's file and line)")
}

// Run runs the tests under the paths in args.
func (c *testCommand) Run(ctx context.Context, cio *cmdIO, paths []string) error {
	write := map[string]func(*policytester.Report, io.Writer) error{
		"table": (*policytester.Report).WriteTable, "json": (*policytester.Report).WriteJSON,
		"junit": (*policytester.Report).WriteJUnit, "github": (*policytester.Report).WriteGitHub,
	}[c.output]
	if write == nil {
		return usageError("-o %q: want table, json, junit or github", c.output)
	}
	if len(paths) == 0 {
		cio.usage()
		return usageError("no test paths: give test files or directories holding them")
	}
	rep, err := policytester.Run(ctx, paths...)
	if err != nil {
		return err
	}
	if err := write(rep, cio.stdout); err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("%d of %d cases failed, %d tests could not run",
			rep.Failed, rep.Failed+rep.Passed, len(rep.Errors))
	}
	return nil
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Exit statuses of every subcommand.
const (
	exitFailed = 1 // invalid input, failed tests, failed demo step, a server that stopped on an error
	exitUsage  = 2 // bad flags or arguments
)

// exitError is an error with the exit status it calls for. It is the only such type: an error
// without one exits with exitFailed (see exitCode).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a command-line mistake (exit status exitUsage).
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode is the exit status err calls for: its exitError's, else exitFailed.
func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailed
}

// errHelpShown ends a subcommand successfully after -h printed its usage.
var errHelpShown = errors.New("help shown")

// helpOK turns errHelpShown into success.
func helpOK(err error) error {
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

// newFlagSet returns the flag set of `tollgate <name>`, writing its usage to stderr.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("tollgate "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: tollgate %s %s\n", name, synopsis)
		printFlags(stderr, fs)
	}
	return fs
}

// flagName is a flag as written on the command line: -o for one letter, --bind-address otherwise.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// printFlags writes fs's current flags (deprecated spellings left out) in one format for every
// command: the flag with its value's type, then its usage and default on an indented line.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Usage, deprecatedPrefix) {
			return
		}
		if first {
			fmt.Fprint(w, "\nFlags:\n")
			first = false
		}
		typ, usage := flag.UnquoteUsage(f)
		line := "  " + flagName(f.Name)
		if typ != "" {
			line += " " + typ
		}
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "[]" && def != "0s" {
			if typ == "string" {
				def = strconv.Quote(def)
			}
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, usage)
	})
}

// parseFlags parses flags anywhere among the arguments and returns the positional ones. After -h
// the error is errHelpShown; a bad flag is a usage error.
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

// deprecatedPrefix starts the usage of every deprecated flag; warnDeprecated finds them by it.
const deprecatedPrefix = "deprecated: use --"

// alias is an old spelling of a flag, kept working for existing command lines and manifests.
type alias struct{ old, cur string }

// deprecatedAliases registers old spellings of flags already on fs: each old name shares the
// current flag's value (so the last one given wins) and its usage says which to use instead. An
// alias of a flag fs lacks is left out (TestDeprecatedAliases checks there is none).
func deprecatedAliases(fs *flag.FlagSet, aliases ...alias) {
	for _, a := range aliases {
		if f := fs.Lookup(a.cur); f != nil {
			fs.Var(f.Value, a.old, deprecatedPrefix+a.cur)
		}
	}
}

// warnDeprecated writes one line to w for each deprecated flag given on the command line.
func warnDeprecated(fs *flag.FlagSet, w io.Writer) {
	fs.Visit(func(f *flag.Flag) {
		if cur, ok := strings.CutPrefix(f.Usage, deprecatedPrefix); ok {
			fmt.Fprintf(w, "%s: flag --%s is deprecated: use --%s\n", fs.Name(), f.Name, cur)
		}
	})
}

// pathList is a repeatable flag; each value may also hold comma-separated paths.
type pathList []string

func (p *pathList) String() string { return strings.Join(*p, ",") }

// Set adds the comma-separated paths of v.
func (p *pathList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*p = append(*p, s)
		}
	}
	return nil
}

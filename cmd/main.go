// Command tollgate is the one Tollgate binary: the operator's manager, the decision endpoint, and the
// offline tools (eval, test, serve, demo), chosen by the first argument.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// subcommand runs one tollgate subcommand with its own arguments.
type subcommand struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func subcommands() map[string]subcommand {
	return map[string]subcommand{
		"manager": {"run the controllers and admission webhooks (in-cluster operator)", runManager},
		"decider": {"serve decisions over HTTP from the bundles in the cluster", runDecider},
		"eval":    {"decide one request against policy and passport files, offline", runEval},
		"test":    {"run policy test files (cases with expected decisions)", runTest},
		"serve":   {"serve the decision API from files, without a cluster", runServe},
		"demo":    {"run a local demo on an embedded control plane", runDemo},
		"hook":    {"answer a coding agent's pre-tool hook (Claude Code, Gemini CLI, Cursor)", runHook},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmds := subcommands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tollgate: unknown command %q\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, args[1:], stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "tollgate %s: %v\n", args[0], err)
		return exitCode(err)
	}
	return 0
}

// exitCoder lets a subcommand choose its exit status (e.g. 1 for failed tests, 2 for bad input).
type exitCoder interface{ ExitCode() int }

func exitCode(err error) int {
	if ec, ok := err.(exitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}

func usage(w io.Writer, cmds map[string]subcommand) {
	fmt.Fprintln(w, "Usage: tollgate <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(cmds))
	for name := range cmds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-8s %s\n", name, cmds[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'tollgate <command> -h' for a command's flags.")
}

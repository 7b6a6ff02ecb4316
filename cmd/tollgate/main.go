// Command tollgate is the one Tollgate binary: the operator's manager, the decision endpoint, and the
// offline tools (eval, test, serve, demo), chosen by the first argument.
//
// Every subcommand is an options struct (a command): BindFlags registers its flags, mostly through
// the shared option groups of options.go, and Run runs it with the positional arguments. The table
// in commands lists them; one path (runCommand) builds the flag set, parses it, warns about
// deprecated spellings and runs the command, so help, aliases and errors behave the same everywhere.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"
)

// command is one tollgate subcommand: its options, bound to flags, and what it does with them.
type command interface {
	// BindFlags registers the command's flags on fs, with the current field values as defaults.
	BindFlags(fs *flag.FlagSet)
	// Run runs the command with the positional arguments left after the flags.
	Run(ctx context.Context, cio *cmdIO, args []string) error
}

// cmdIO is what a running command uses besides its options.
type cmdIO struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// usage prints the command's usage and flags to stderr.
	usage func()
}

// commandInfo describes one subcommand in the table.
type commandInfo struct {
	// summary is the line of `tollgate help`.
	summary string
	// synopsis follows "tollgate <name>" in the command's usage line.
	synopsis string
	// new returns the command's options with their defaults.
	new func() command
	// rawArgs hands Run the arguments unparsed; the command parses them itself with its BindFlags
	// (hook: the agent comes first, and a bad flag is answered to the agent).
	rawArgs bool
}

// commands is the table of subcommands.
func commands() map[string]commandInfo {
	return map[string]commandInfo{
		"manager": {summary: "run the controllers and admission webhooks (in-cluster operator)",
			synopsis: "[flags]", new: newManagerCommand},
		"decider": {summary: "serve decisions over HTTP from the bundles in the cluster",
			synopsis: "--bundle-namespace NS [flags]", new: newDeciderCommand},
		"eval": {summary: "decide one request against policy and passport files, offline",
			synopsis: "-f PATH... [--request REQ.json|-] [flags]", new: newEvalCommand},
		"test": {summary: "run policy test files (cases with expected decisions)",
			synopsis: "PATH... [-o table|json]", new: newTestCommand},
		"serve": {summary: "serve the decision API from files, without a cluster",
			synopsis: "-f PATH... [--bind-address 127.0.0.1:8080] [flags]", new: newServeCommand},
		"demo": {summary: "run a local demo on an embedded control plane",
			synopsis: "[--once] [--bind-address 127.0.0.1:8080] [flags]", new: newDemoCommand},
		"hook": {summary: "answer a coding agent's pre-tool hook (Claude Code, Gemini CLI, Cursor)",
			synopsis: "<agent> [flags] < event.json", new: newHookCommand, rawArgs: true},
		"verify": {summary: "check a signed decision against the decider's public keys (JWKS), offline",
			synopsis: "--jwks FILE|URL [DECISION.json|-]", new: newVerifyCommand},
		"keygen": {summary: "print a new Ed25519 key set for the decider's --signing-keys",
			synopsis: "[--kid ID]", new: newKeygenCommand},
		"mcp-proxy": {summary: "guard an agent's MCP servers: decide every tool call passing through", synopsis: mcpProxySynopsis, new: newMCPProxyCommand, rawArgs: true},
		"install": {summary: "apply the install manifest to a cluster, or print it (--print)",
			synopsis: "[--print] [--image IMAGE] [--kubeconfig PATH] [--dry-run]", new: newInstallCommand},
		"version": {summary: "print the version, commit and Go version",
			synopsis: "[-o text|json]", new: newVersionCommand},
		"completion": {summary: "write a shell completion script (bash, zsh or fish)",
			synopsis: "bash|zsh|fish", new: newCompletionCommand},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 2 && args[0] == "help" {
		// tollgate help <command> is tollgate <command> -h.
		args = []string{args[1], "-h"}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	info, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tollgate: unknown command %q\n", args[0])
		usage(stderr, cmds)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cio := &cmdIO{stdin: stdin, stdout: stdout, stderr: stderr}
	if err := helpOK(runCommand(ctx, args[0], info, args[1:], cio)); err != nil {
		fmt.Fprintf(stderr, "tollgate %s: %v\n", args[0], err)
		return exitCode(err)
	}
	return 0
}

// runCommand parses the command's flags, warns about deprecated spellings and runs it. After -h the
// error is errHelpShown.
func runCommand(ctx context.Context, name string, info commandInfo, args []string, cio *cmdIO) error {
	cmd := info.new()
	if info.rawArgs {
		return cmd.Run(ctx, cio, args)
	}
	fs := newFlagSet(name, info.synopsis, cio.stderr)
	cmd.BindFlags(fs)
	cio.usage = fs.Usage
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	warnDeprecated(fs, cio.stderr)
	return cmd.Run(ctx, cio, rest)
}

func usage(w io.Writer, cmds map[string]commandInfo) {
	fmt.Fprintln(w, "Usage: tollgate <command> [flags]\n\nCommands:")
	for _, name := range slices.Sorted(maps.Keys(cmds)) {
		fmt.Fprintf(w, "  %-10s %s\n", name, cmds[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'tollgate help <command>' (or 'tollgate <command> -h') for a command's flags,\nand 'tollgate completion bash|zsh|fish' for shell completion.")
}

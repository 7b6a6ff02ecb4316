package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// completionCommand writes a shell completion script for tollgate, generated from the command table
// and each command's flags, so it never lags behind them.
type completionCommand struct{}

func newCompletionCommand() command { return &completionCommand{} }

// BindFlags registers nothing: the shell is the argument.
func (c *completionCommand) BindFlags(*flag.FlagSet) {}

// Run writes the script for the shell named by the one argument.
func (c *completionCommand) Run(_ context.Context, cio *cmdIO, args []string) error {
	if len(args) != 1 {
		return usageError("want one shell: bash, zsh or fish")
	}
	specs := completionSpecs(commands())
	var err error
	switch args[0] {
	case "bash":
		err = writeBashCompletion(cio.stdout, specs, false)
	case "zsh":
		err = writeBashCompletion(cio.stdout, specs, true)
	case "fish":
		err = writeFishCompletion(cio.stdout, specs)
	default:
		return usageError("unknown shell %q: want bash, zsh or fish", args[0])
	}
	if err != nil {
		return fmt.Errorf("writing the %s completion: %w", args[0], err)
	}
	return nil
}

// completionSpec is what completion knows of one command.
type completionSpec struct {
	name, summary string
	flags         []*flag.Flag
}

// completionSpecs lists the commands in name order with their current (not deprecated) flags.
func completionSpecs(cmds map[string]commandInfo) []completionSpec {
	var specs []completionSpec
	for _, name := range slices.Sorted(maps.Keys(cmds)) {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		cmds[name].new().BindFlags(fs)
		spec := completionSpec{name: name, summary: cmds[name].summary}
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.HasPrefix(f.Usage, deprecatedPrefix) {
				spec.flags = append(spec.flags, f)
			}
		})
		specs = append(specs, spec)
	}
	return specs
}

// writeBashCompletion writes a bash completion function; for zsh it is loaded through bashcompinit,
// as kubectl's and many others' are.
func writeBashCompletion(w io.Writer, specs []completionSpec, zsh bool) error {
	var b strings.Builder
	if zsh {
		b.WriteString("#compdef tollgate\n# zsh completion for tollgate: source it, or put it in a directory of $fpath as _tollgate.\nautoload -U +X bashcompinit && bashcompinit\n")
	} else {
		b.WriteString("# bash completion for tollgate: source <(tollgate completion bash)\n")
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	fmt.Fprintf(&b, "_tollgate() {\n\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" flags=\"\"\n")
	fmt.Fprintf(&b, "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\treturn\n\tfi\n", strings.Join(append(names, "help"), " "))
	b.WriteString("\tcase \"${COMP_WORDS[1]}\" in\n")
	for _, s := range specs {
		flags := make([]string, len(s.flags))
		for i, f := range s.flags {
			flags[i] = flagName(f.Name)
		}
		fmt.Fprintf(&b, "\t%s) flags=%q ;;\n", s.name, strings.Join(flags, " "))
	}
	fmt.Fprintf(&b, "\thelp) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", strings.Join(names, " "))
	b.WriteString("\tesac\n\tif [[ \"$cur\" == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n\telse\n\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n\tfi\n}\n")
	b.WriteString("complete -o default -F _tollgate tollgate\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFishCompletion writes fish `complete` lines: the commands with their summaries, then each
// command's flags with their usage.
func writeFishCompletion(w io.Writer, specs []completionSpec) error {
	var b strings.Builder
	b.WriteString("# fish completion for tollgate: tollgate completion fish > ~/.config/fish/completions/tollgate.fish\n")
	b.WriteString("complete -c tollgate -f\n")
	for _, s := range specs {
		fmt.Fprintf(&b, "complete -c tollgate -n __fish_use_subcommand -a %s -d %s\n", s.name, fishQuote(s.summary))
	}
	for _, s := range specs {
		for _, f := range s.flags {
			_, usage := flag.UnquoteUsage(f)
			opt := "-l " + f.Name
			if len(f.Name) == 1 {
				opt = "-s " + f.Name
			}
			fmt.Fprintf(&b, "complete -c tollgate -n '__fish_seen_subcommand_from %s' %s -d %s\n", s.name, opt, fishQuote(usage))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fishQuote single-quotes s for fish, which escapes only \ and ' inside single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

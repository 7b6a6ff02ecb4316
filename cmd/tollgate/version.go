package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/tollgate-dev/tollgate/internal/version"
)

// versionCommand prints the binary's version, commit and Go version.
type versionCommand struct {
	output string
}

func newVersionCommand() command { return &versionCommand{output: "text"} }

// BindFlags registers version's flags.
func (c *versionCommand) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.output, "o", c.output, "output format: text or json")
}

// Run prints the version.
func (c *versionCommand) Run(_ context.Context, cio *cmdIO, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected arguments %q", args)
	}
	info := version.Get()
	switch c.output {
	case "text":
		fmt.Fprintf(cio.stdout, "tollgate %s\n", info.Version)
		if info.Commit != "" {
			modified := ""
			if info.Modified {
				modified = " (modified)"
			}
			fmt.Fprintf(cio.stdout, "commit:   %s%s\n", info.Commit, modified)
		}
		fmt.Fprintf(cio.stdout, "go:       %s\nplatform: %s\n", info.GoVersion, info.Platform)
		return nil
	case "json":
		enc := json.NewEncoder(cio.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(info); err != nil {
			return fmt.Errorf("writing the version: %w", err)
		}
		return nil
	default:
		return usageError("-o %q: want text or json", c.output)
	}
}

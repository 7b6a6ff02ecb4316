package shell

import (
	"errors"
	"fmt"
	"strings"
)

// CommandPattern is a blocked pattern read as a command or a pipeline, e.g.
// "rm -rf", "sudo", "kubectl delete", "git push --force", "curl | sh",
// "chmod 777".
type CommandPattern struct {
	src    string
	stages []cmdPattern
}

type cmdPattern struct {
	name        string
	flags       []string // sorted
	positionals []string
	wrappers    []string // required wrappers ("sudo rm": rm run through sudo)
}

// IsPathPattern reports whether s is a path pattern ("/etc/shadow",
// "~/.ssh", "./x", "../x", "$HOME/x"), which is not a command pattern.
func IsPathPattern(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range [...]string{"/", "~", "./", "../", "$HOME"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// CompilePattern parses a command pattern. The pattern is analysed like a
// command, so its flags are normalized the same way ("rm -fr" is "rm -rf").
// It must be one simple command or one pipeline of simple commands, with
// static words only: no redirections, substitutions, variables or globs.
func CompilePattern(s string) (*CommandPattern, error) {
	src := strings.TrimSpace(s)
	if src == "" {
		return nil, errors.New("shell: empty command pattern")
	}
	if IsPathPattern(src) {
		return nil, fmt.Errorf("shell: %q is a path pattern, not a command pattern", src)
	}
	sc, err := Analyze(src, Limits{MaxBytes: 4 << 10, MaxDepth: 1, MaxCommands: 64, MaxWords: 256})
	if err != nil {
		return nil, fmt.Errorf("shell: command pattern %q: %w", src, err)
	}
	if len(sc.Redirects) > 0 {
		return nil, fmt.Errorf("shell: command pattern %q has a redirection", src)
	}
	if len(sc.Assignments) > 0 {
		return nil, fmt.Errorf("shell: command pattern %q has an assignment", src)
	}
	var tops []int
	for i := range sc.Commands {
		if sc.Commands[i].Parent == -1 {
			tops = append(tops, i)
		}
	}
	p := &CommandPattern{src: src}
	switch {
	case len(tops) == 0:
		return nil, fmt.Errorf("shell: command pattern %q has no command", src)
	case len(tops) == 1:
		cp, err := patternOf(sc, tops[0], src)
		if err != nil {
			return nil, err
		}
		p.stages = []cmdPattern{cp}
	default:
		if len(sc.stages) != 1 || len(sc.stages[0]) != len(tops) {
			return nil, fmt.Errorf("shell: command pattern %q must be one command or one pipeline", src)
		}
		for _, st := range sc.stages[0] {
			var top = -1
			for i := int(st.lo); i < int(st.hi); i++ {
				if sc.Commands[i].Parent == -1 {
					if top >= 0 {
						return nil, fmt.Errorf("shell: command pattern %q must be one command or one pipeline", src)
					}
					top = i
				}
			}
			if top < 0 {
				return nil, fmt.Errorf("shell: command pattern %q must be one command or one pipeline", src)
			}
			cp, err := patternOf(sc, top, src)
			if err != nil {
				return nil, err
			}
			p.stages = append(p.stages, cp)
		}
	}
	return p, nil
}

// patternOf makes a pattern of command i; a plain wrapper (sudo, env, nice,
// ...) with a command becomes that command with the wrapper required.
func patternOf(sc *Script, i int, src string) (cmdPattern, error) {
	if err := staticCommand(&sc.Commands[i], src); err != nil {
		return cmdPattern{}, err
	}
	for {
		child := -1
		for j := i + 1; j < len(sc.Commands); j++ {
			if sc.Commands[j].Parent == i && sc.Commands[j].Via == sc.Commands[i].Via {
				if child >= 0 {
					child = -2 // several: keep the wrapper itself
					break
				}
				child = j
			}
		}
		if child < 0 || !plainWrapper(sc.Commands[i].Name) {
			break
		}
		i = child
		if err := staticCommand(&sc.Commands[i], src); err != nil {
			return cmdPattern{}, err
		}
	}
	cmd := &sc.Commands[i]
	cp := cmdPattern{name: cmd.Name, flags: cmd.Flags, wrappers: cmd.Wrappers}
	for _, w := range cmd.Positionals {
		cp.positionals = append(cp.positionals, w.Value)
	}
	return cp, nil
}

func staticCommand(cmd *Command, src string) error {
	if cmd.Dynamic {
		return fmt.Errorf("shell: command pattern %q has a program name that is not static", src)
	}
	for _, w := range cmd.Args {
		if w.Dynamic {
			return fmt.Errorf("shell: command pattern %q has a word that is not static", src)
		}
		if w.Glob {
			return fmt.Errorf("shell: command pattern %q has a glob", src)
		}
	}
	return nil
}

// plainWrapper reports wrappers that only change how a command runs.
func plainWrapper(name string) bool {
	switch name {
	case "xargs", "find", "watch", "ssh", "su", "runuser", "script", "parallel", "sg", "flock":
		return false
	}
	_, ok := wrappers[name]
	return ok
}

// String returns the pattern as written.
func (p *CommandPattern) String() string { return p.src }

// Match returns the index in s.Commands of the first command the pattern
// matches; for a pipeline pattern, the command that matched the pattern's
// last stage.
//
// A command matches when its Name equals the pattern's program name (ASCII
// case folded), its Flags include all the pattern's flags, its Positionals
// include the pattern's positional words in order (exact Values, static
// words only), and its Wrappers include the pattern's wrappers in order. A
// pipeline pattern "a | b" matches a pipeline where a command matching a is
// in an earlier stage than a command matching b; on the right of a pipeline
// pattern a shell name matches any shell, and python/perl/ruby/node/php
// match their versioned names (python3.12).
func (p *CommandPattern) Match(s *Script) (int, bool) {
	if p == nil || s == nil || len(p.stages) == 0 {
		return -1, false
	}
	if len(p.stages) == 1 {
		for i := range s.Commands {
			if p.stages[0].match(&s.Commands[i], false) {
				return i, true
			}
		}
		return -1, false
	}
	for _, pl := range s.stages {
		k := 0
		last := -1
		for _, st := range pl {
			if k == len(p.stages) {
				break
			}
			for ci := st.lo; ci < st.hi; ci++ {
				if s.Commands[ci].scope == st.scope && p.stages[k].match(&s.Commands[ci], k > 0) {
					last = int(ci)
					k++
					break
				}
			}
		}
		if k == len(p.stages) {
			return last, true
		}
	}
	return -1, false
}

func (cp *cmdPattern) match(c *Command, right bool) bool {
	if c.Dynamic {
		return false
	}
	if !nameMatch(cp.name, c.Name, right) {
		return false
	}
	// Flags: both sorted.
	j := 0
	for _, f := range cp.flags {
		for j < len(c.Flags) && c.Flags[j] < f {
			j++
		}
		if j == len(c.Flags) || c.Flags[j] != f {
			return false
		}
	}
	j = 0
	for _, want := range cp.positionals {
		for j < len(c.Positionals) && (c.Positionals[j].Dynamic || c.Positionals[j].Value != want) {
			j++
		}
		if j == len(c.Positionals) {
			return false
		}
		j++
	}
	j = 0
	for _, want := range cp.wrappers {
		for j < len(c.Wrappers) && !strings.EqualFold(c.Wrappers[j], want) {
			j++
		}
		if j == len(c.Wrappers) {
			return false
		}
		j++
	}
	return true
}

func nameMatch(pat, name string, right bool) bool {
	if strings.EqualFold(pat, name) {
		return true
	}
	if !right {
		return false
	}
	if isShell(pat) && isShell(name) {
		return true
	}
	switch f := family(strings.ToLower(pat)); f {
	case "python", "perl", "ruby", "node", "php", "lua":
		return family(name) == f || (f == "node" && name == "nodejs")
	}
	return false
}

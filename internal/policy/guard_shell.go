package policy

import (
	"path"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/policy/paths"
	"github.com/tollgate-dev/tollgate/internal/policy/shell"
)

// harmlessBuiltins run nothing and open no file by themselves (their redirections and
// substitutions are still checked), so allowed_commands need not list them.
var harmlessBuiltins = map[string]bool{
	"cd": true, "pwd": true, "true": true, "false": true, ":": true, "test": true, "[": true, "[[": true,
	"echo": true, "printf": true, "exit": true, "return": true, "break": true, "continue": true,
	"shift": true, "read": true, "wait": true, "set": true, "unset": true, "export": true,
	"declare": true, "local": true, "readonly": true, "typeset": true, "pushd": true, "popd": true,
	"exec": true, // the command it runs, if any, is checked on its own; alone it only redirects
}

// noFileArgs are programs whose arguments are never paths they open, so the path checks skip their
// arguments (not their redirections).
var noFileArgs = map[string]bool{
	"echo": true, "printf": true, "true": true, "false": true, ":": true, "test": true, "[": true,
	"kill": true, "sleep": true, "expr": true, "seq": true, "date": true, "pgrep": true, "exit": true,
	"return": true, "export": true, "unset": true, "set": true, "shift": true, "which": true,
	"type": true, "id": true, "whoami": true, "uname": true, "hostname": true, "pwd": true, "wait": true,
	"read": true, "basename": true, "dirname": true, "declare": true, "local": true, "readonly": true,
	"cd": true, "pushd": true, "popd": true, // where they go is followed (nextDir), not read
}

// writeMode says which path arguments of a command are written.
type writeMode int

const (
	writeNone    writeMode = iota
	writeAll               // every path argument
	writeLast              // the destination (the last of two or more)
	writeInPlace           // only with -i / --in-place (sed -i)
)

// writeCommands open (some of) their path arguments for writing or remove them.
var writeCommands = map[string]writeMode{
	"rm": writeAll, "rmdir": writeAll, "unlink": writeAll, "shred": writeAll, "truncate": writeAll, "touch": writeAll,
	"mkdir": writeAll, "mkfifo": writeAll, "mknod": writeAll, "chmod": writeAll, "chown": writeAll, "chgrp": writeAll,
	"chattr": writeAll, "setfacl": writeAll, "tee": writeAll, "mv": writeAll, "crontab": writeAll,
	"cp": writeLast, "ln": writeLast, "install": writeLast, "rsync": writeLast, "scp": writeLast,
	"sed": writeInPlace, "perl": writeInPlace,
}

// grepLike take a pattern as their first positional argument (unless -e or -f gives it).
var grepLike = map[string]bool{"grep": true, "egrep": true, "fgrep": true, "rg": true, "ag": true, "ack": true, "git-grep": true}

// urlCommands take URLs (or bare hosts) as positional arguments.
var urlCommands = map[string]bool{"curl": true, "wget": true, "http": true, "https": true, "xh": true, "aria2c": true,
	"nc": true, "ncat": true, "netcat": true, "telnet": true, "socat": true}

// commandTrait is what the command and path checks know of a program, from the tables above: one
// lookup per command instead of one per table.
type commandTrait struct {
	harmless bool // harmlessBuiltins
	noFiles  bool // noFileArgs
	write    writeMode
	grepLike bool
	url      bool // urlCommands
}

// commandTraits is built once from the tables and never written afterwards.
var commandTraits = func() map[string]commandTrait {
	m := map[string]commandTrait{}
	set := func(names map[string]bool, f func(*commandTrait)) {
		for n := range names {
			t := m[n]
			f(&t)
			m[n] = t
		}
	}
	set(harmlessBuiltins, func(t *commandTrait) { t.harmless = true })
	set(noFileArgs, func(t *commandTrait) { t.noFiles = true })
	set(grepLike, func(t *commandTrait) { t.grepLike = true })
	set(urlCommands, func(t *commandTrait) { t.url = true })
	for n, w := range writeCommands {
		t := m[n]
		t.write = w
		m[n] = t
	}
	return m
}()

// checkCommand analyses a shell command and applies the passport's limits to every command it
// would run: blocked command patterns first (DESIGN.md), then allowed_commands, dynamic programs and
// inline code, then paths (blocked path patterns, blocked_paths, the baseline) and URLs. cwd is the
// working directory the call names ("" when unknown). It returns the analysis, which CEL sees as
// call.commands. Analyses, and the verdicts for cwd "", come from cache when it has them.
func (l *passportLimits) checkCommand(cache *analysisCache, src, cwd string) (commandAnalysis, verdict) {
	return cache.check(l, src, cwd)
}

// checkScript applies the limits to an analysed command (see checkCommand).
func (l *passportLimits) checkScript(script *shell.Script, src, cwd string) verdict {
	c := &l.cmd
	for _, p := range c.patterns {
		if _, ok := p.Match(script); ok {
			return denyWith(CodeBlockedPattern, "command matches blocked pattern %q", p.String())
		}
	}
	// The passport's own blocked paths come with its blocked patterns, before allowed_commands.
	if l.cmd.blockedPaths != nil {
		first := pathSets{blocked: l.cmd.blockedPaths, static: true, mode: globMode(script)}
		if v := first.checkScript(l, script, cwd); v.code != "" {
			return v
		}
	}
	// A function may shadow a builtin (the fork bomb is a function named ":"), so a script that
	// defines functions gets no free builtins.
	freeBuiltins := !definesFunction(src)
	free := func(name string) bool { return freeBuiltins && commandTraits[name].harmless }
	for i := range script.Commands {
		cmd := &script.Commands[i]
		switch {
		case cmd.Dynamic && !isTestBracket(cmd):
			if !c.allowDynamic {
				return denyWith(CodeCommandNotAllowed, "a program name cannot be resolved statically (set %s to allow it)", LimitAllowDynamicCommands)
			}
		case c.restrict && !free(cmd.Name) && !isTestBracket(cmd):
			if _, ok := c.allowed[cmd.Name]; !ok {
				return denyWith(CodeCommandNotAllowed, "program %q is not in the passport's allowed_commands", clipName(cmd.Name))
			}
		}
		if cmd.Code != shell.CodeNone && !c.allowCode {
			return denyWith(CodeCommandNotAllowed, "%s runs code the guard cannot analyse (%s; set %s to allow it)",
				clipName(cmd.Name), cmd.Code, LimitAllowInlineCode)
		}
	}
	sets := pathSets{blocked: l.cmd.blockedPaths, readBlocked: l.read.blocked, writeBlocked: l.write.blocked, mode: globMode(script)}
	if l.cmd.baseline {
		sets.readBase, sets.writeBase = paths.BaselineRead(), paths.BaselineWrite()
	}
	return sets.checkScript(l, script, cwd)
}

// globMode is how the script's shell expands globs: without dotglob (bash's and sh's default)
// unless the script may turn it on (shopt, setopt, set).
func globMode(script *shell.Script) paths.GlobMode {
	for i := range script.Commands {
		switch script.Commands[i].Name {
		case "shopt", "setopt", "set", "options":
			return paths.GlobShell
		}
		if script.Commands[i].Dynamic {
			return paths.GlobShell
		}
	}
	return paths.GlobShellNoDot
}

// definesFunction reports whether a script may define a shell function ("name()" or "function").
func definesFunction(src string) bool {
	if strings.Contains(src, "function") {
		return true
	}
	for i := strings.IndexByte(src, '('); i >= 0; {
		rest := strings.TrimLeft(src[i+1:], " \t")
		if strings.HasPrefix(rest, ")") {
			return true
		}
		j := strings.IndexByte(src[i+1:], '(')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return false
}

// isTestBracket reports the test command "[" (a lone bracket is no glob).
func isTestBracket(cmd *shell.Command) bool {
	return cmd.Name == "[" || cmd.Program == "["
}

// pathSets are the path lists a shell command's words are checked against.
type pathSets struct {
	// static checks only blocked on words known statically, and no URLs (the first pass).
	static       bool
	mode         paths.GlobMode // how the script's shell expands globs
	blocked      *paths.Set     // blocked_patterns' paths: any argument or redirection
	readBlocked  *paths.Set
	readBase     *paths.Set
	writeBlocked *paths.Set
	writeBase    *paths.Set
}

// checkScript checks every command's path arguments, redirections and URLs. Relative paths are
// resolved against the directory the script cd'd into, when known.
func (sets *pathSets) checkScript(l *passportLimits, script *shell.Script, cwd string) verdict {
	for _, r := range script.Redirects { // every redirection, also those of no command (">file")
		if v := sets.checkRedirect(r, cwd); v.code != "" {
			return v
		}
	}
	for i := range script.Commands {
		cmd := &script.Commands[i]
		for _, r := range cmd.Redirects {
			if v := sets.checkRedirect(r, cwd); v.code != "" {
				return v
			}
		}
		if cmd.Dynamic && !isTestBracket(cmd) {
			continue // denied earlier unless allowed; its words mean nothing statically
		}
		trait := commandTraits[cmd.Name]
		if sets.static || !trait.noFiles && !isTestBracket(cmd) {
			if v := l.checkArgs(cmd, trait, sets, cwd); v.code != "" {
				return v
			}
		}
		if cmd.Name == "cd" || cmd.Name == "pushd" {
			cwd = nextDir(cwd, cmd)
		}
	}
	return verdict{}
}

// checkRedirect checks one redirection's target (here-documents and descriptor duplications have
// no file).
func (s *pathSets) checkRedirect(r shell.Redirect, cwd string) verdict {
	switch r.Op {
	case "<<", "<<-", "<<<":
		return verdict{}
	}
	if strings.HasPrefix(r.Target.Value, "&") && !r.Target.Dynamic {
		return verdict{}
	}
	return s.check(r.Target, cwd, r.Write)
}

// nextDir is the working directory after a cd.
func nextDir(cwd string, cmd *shell.Command) string {
	if len(cmd.Positionals) == 0 {
		return "~"
	}
	w := cmd.Positionals[0]
	if w.Dynamic || w.Glob || w.Value == "-" {
		return "*"
	}
	c, err := paths.Canonical(w.Value)
	if err != nil {
		return "*"
	}
	if strings.HasPrefix(c, "/") || strings.HasPrefix(c, "~") {
		return c
	}
	if cwd == "" {
		if strings.HasPrefix(c, "..") {
			return "*"
		}
		return ""
	}
	if cwd == "*" {
		return "*"
	}
	return path.Join(cwd, c)
}

// checkArgs checks one command's path-like arguments and URLs.
func (l *passportLimits) checkArgs(cmd *shell.Command, trait commandTrait, sets *pathSets, cwd string) verdict {
	mode := trait.write
	if mode == writeInPlace && !hasFlag(cmd, "i") && !hasFlag(cmd, "in-place") {
		mode = writeNone
	}
	pos := cmd.Positionals
	if trait.grepLike && !hasFlag(cmd, "e") && !hasFlag(cmd, "f") && !hasFlag(cmd, "regexp") && len(pos) > 0 {
		pos = pos[1:]
	}
	if trait.url && !sets.static {
		for _, w := range pos {
			if v := l.checkURLWord(w, cmd.Name); v.code != "" {
				return v
			}
		}
	}
	if v := l.checkPositionals(cmd, pos, mode, sets, cwd); v.code != "" {
		return v
	}
	return l.checkFlagValues(cmd, mode != writeNone, sets, cwd)
}

// checkPositionals checks the positional arguments as paths (written ones against the write lists)
// and as URLs.
func (l *passportLimits) checkPositionals(cmd *shell.Command, pos []shell.Word, mode writeMode, sets *pathSets, cwd string) verdict {
	for j, w := range pos {
		write := mode == writeAll || mode == writeInPlace || (mode == writeLast && j == len(pos)-1 && len(pos) > 1)
		if cmd.Name == "dd" {
			if k, val, ok := strings.Cut(w.Value, "="); ok {
				w = shell.Word{Value: val, Dynamic: w.Dynamic, Glob: w.Glob, Pattern: afterEq(w.Pattern)}
				write = k == "of"
			}
		}
		if v := sets.check(w, cwd, write); v.code != "" {
			return v
		}
		if sets.static {
			continue
		}
		if v := l.checkEmbeddedURL(w); v.code != "" {
			return v
		}
	}
	return verdict{}
}

// checkFlagValues checks values attached to flags: --file=/etc/shadow, -o/etc/passwd.
func (l *passportLimits) checkFlagValues(cmd *shell.Command, write bool, sets *pathSets, cwd string) verdict {
	for _, w := range cmd.Args {
		if !strings.HasPrefix(w.Value, "-") {
			continue
		}
		val, ok := flagValue(w.Value)
		if !ok || !w.Dynamic && !pathLike(val) {
			continue
		}
		fw := shell.Word{Value: val, Dynamic: w.Dynamic, Glob: w.Glob}
		if w.Glob {
			fw.Pattern = "*" // conservative: the attached value's glob form is not split out
			if pv, ok := flagValue(w.Pattern); ok && strings.HasPrefix(w.Pattern, "-") {
				fw.Pattern = pv
			}
		}
		if v := sets.check(fw, cwd, write); v.code != "" {
			return v
		}
		if sets.static {
			continue
		}
		if v := l.checkEmbeddedURL(fw); v.code != "" {
			return v
		}
	}
	return verdict{}
}

// pathLike reports a value that names a path (absolute, home or explicitly relative).
func pathLike(s string) bool {
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, ".")
}

func afterEq(p string) string {
	if _, v, ok := strings.Cut(p, "="); ok {
		return v
	}
	return p
}

// flagValue returns the path-like value attached to a flag word.
func flagValue(s string) (string, bool) {
	if i := strings.IndexByte(s, '='); i > 0 {
		return s[i+1:], true
	}
	if strings.HasPrefix(s, "--") {
		return "", false
	}
	if i := strings.IndexAny(s, "/~"); i > 1 {
		return s[i:], true
	}
	return "", false
}

func hasFlag(cmd *shell.Command, f string) bool {
	for _, x := range cmd.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// checkURLWord checks a positional argument of a network client as a URL or host.
func (l *passportLimits) checkURLWord(w shell.Word, prog string) verdict {
	if w.Dynamic {
		if host := urlHostPart(w.Value); strings.Contains(host, "*") {
			return denyWith(CodeInvalidContext, "a %s destination cannot be resolved statically", clipName(prog))
		}
		return verdict{}
	}
	return l.web.checkURL(w.Value, false)
}

// checkEmbeddedURL checks a word that is a URL (scheme://…) anywhere in a command.
func (l *passportLimits) checkEmbeddedURL(w shell.Word) verdict {
	if !strings.Contains(w.Value, "://") {
		return verdict{}
	}
	if w.Dynamic {
		if strings.Contains(urlHostPart(w.Value), "*") {
			return denyWith(CodeInvalidContext, "a URL's host cannot be resolved statically")
		}
		return verdict{}
	}
	return l.web.checkURL(w.Value, true)
}

// urlHostPart returns the authority of a URL-ish word (after scheme://, before the first /).
func urlHostPart(s string) string {
	if _, rest, ok := strings.Cut(s, "://"); ok {
		s = rest
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	return s
}

// check matches one word (a path argument or a redirection target) against the sets. A word with
// glob characters or dynamic parts is matched by what it could expand to.
func (s *pathSets) check(w shell.Word, cwd string, write bool) verdict {
	if w.ProcSubst() || (s.static && w.Dynamic) {
		return verdict{}
	}
	value, glob := w.Value, w.Glob || w.Dynamic
	if glob {
		value = w.Pattern
		if value == "" {
			value = "*"
		}
	}
	if value == "" {
		return verdict{}
	}
	var c string
	var buf [32]string
	var parsed paths.Parsed
	reuse := false // parsed is c's parse: the sets match it without parsing c again
	if glob {
		c = resolveGlob(value, cwd)
	} else {
		pp, canon, err := paths.ParsePath(value, buf[:0])
		if err != nil {
			return denyWith(CodeInvalidContext, "a path argument cannot be analysed: %v", err)
		}
		parsed = pp
		c = resolve(canon, cwd)
		reuse = c == canon
		if strings.HasPrefix(c, "*") {
			glob = true
		}
	}
	match := func(set *paths.Set) (*paths.Pattern, bool) {
		if set == nil {
			return nil, false
		}
		if glob {
			mode := s.mode
			if w.Dynamic || (w.Pattern == "*" && w.Value != "*") { // "*": the analysis could not say more
				mode = paths.GlobDynamic
			}
			return set.MatchGlobMode(c, mode)
		}
		if reuse {
			return set.MatchParsed(&parsed)
		}
		return set.Match(c)
	}
	if p, ok := match(s.blocked); ok {
		return denyWith(CodeBlockedPattern, "an argument matches blocked pattern %q", p.String())
	}
	if s.static {
		return verdict{}
	}
	blocked, base, verb := s.readBlocked, s.readBase, verbRead
	if write {
		blocked, base, verb = s.writeBlocked, s.writeBase, verbWrite
	}
	if p, ok := match(blocked); ok {
		return denyWith(CodeBlockedPattern, "an argument matches blocked path %q", p.String())
	}
	if write && base != nil && paths.IsHarmlessDevice(c) {
		return verdict{}
	}
	if p, ok := match(base); ok {
		if glob && !p.Match(c) {
			return denyWith(CodeBlockedPattern, "an argument could expand to a sensitive path (%s baseline %q)", verb, p.String())
		}
		return denyWith(CodeBlockedPattern, "an argument is a sensitive path (%s baseline %q)", verb, p.String())
	}
	return verdict{}
}

// resolve joins a canonical relative path to the known working directory.
func resolve(c, cwd string) string {
	if cwd == "" || strings.HasPrefix(c, "/") || strings.HasPrefix(c, "~") {
		return c
	}
	if cwd == "*" {
		return "*/" + c
	}
	return path.Join(cwd, c)
}

// resolveGlob joins a relative glob to the working directory (without cleaning its wildcards).
func resolveGlob(g, cwd string) string {
	if strings.HasPrefix(g, "/") || strings.HasPrefix(g, "~") || strings.HasPrefix(g, "*") {
		return g
	}
	switch cwd {
	case "":
		return g
	case "*":
		return "*/" + g
	}
	return strings.TrimSuffix(cwd, "/") + "/" + g
}

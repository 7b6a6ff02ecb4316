package shell

import (
	"strings"
)

// programName turns a program word into a Name: directory stripped, ASCII
// folded to lower case, ".exe" removed.
func programName(v string) string {
	if i := strings.LastIndexByte(v, '/'); i >= 0 {
		v = v[i+1:]
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c >= 'A' && c <= 'Z' {
			v = strings.ToLower(v)
			break
		}
	}
	return strings.TrimSuffix(v, ".exe")
}

// family strips a version suffix: python3.11 → python, ksh93 → ksh.
func family(name string) string {
	i := len(name)
	for i > 0 {
		c := name[i-1]
		if c >= '0' && c <= '9' || c == '.' {
			i--
			continue
		}
		break
	}
	if i == 0 {
		return name
	}
	return name[:i]
}

var shellNames = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "pdksh": true,
	"oksh": true, "loksh": true, "ash": true, "hush": true, "fish": true, "csh": true, "tcsh": true,
	"yash": true, "posh": true, "rbash": true, "lksh": true,
}

// isShell reports whether name runs a POSIX-like shell.
func isShell(name string) bool { return shellNames[family(name)] }

// progKind says which tables know a program name, so that dispatch looks
// a name up once.
type progKind uint16

const (
	kindShell progKind = 1 << iota
	kindWrapper
	kindSpecial // handled by a case in dispatch or programCode
	kindFlagAliases
	kindInterp // an interpreter in interps
	kindSingleDash
	kindSubWrapper
	kindChmod // chmod, chown, chgrp: -w is a mode, not a flag
)

// progKinds is filled at init from the tables.
var progKinds = func() map[string]progKind {
	m := map[string]progKind{}
	for n := range shellNames {
		m[n] |= kindShell
	}
	for n := range wrappers {
		m[n] |= kindWrapper
	}
	for n := range subWrappers {
		m[n] |= kindSubWrapper
	}
	for n := range interps {
		m[n] |= kindSpecial | kindInterp
	}
	for n := range flagAliases {
		m[n] |= kindFlagAliases
	}
	for n := range singleDash {
		m[n] |= kindSingleDash
	}
	for _, n := range specialNames {
		m[n] |= kindSpecial
	}
	for _, n := range [...]string{"chmod", "chown", "chgrp"} {
		m[n] |= kindChmod
	}
	return m
}()

// specialNames are handled by name in dispatch or programCode.
var specialNames = []string{
	wEval, wSource, ".", "alias", "trap", "read", "mapfile", "readarray", "getopts", "unset", wWait,
	wPrintf, wExport, wReadonly, wDeclare, wTypeset, wLocal, "set", "shift", "at", "batch", "find",
	"gfind", "bfs", "crontab", "awk", "gawk", "mawk", "nawk", "original-awk", "goawk", "sed", "gsed", "pwsh",
	wPowershell, "pwsh-preview", "deno", "tar", "gtar", "bsdtar", "rsync", "zip", "man", wGit, "vim", "vi",
	"nvim", "view", "ex", "vimdiff", "gvim", "rvim", "nvi", "vim.tiny", "vim.basic", "gdb", "make", "gmake",
	"scp", "sftp", "psql", "mysql", "mariadb", "sqlite3", "sqlite", "nc", "ncat", "netcat", "nc.traditional",
	"nc.openbsd", "socat", "tmux", "screen", "hyperfine", "watchexec", "nodemon", "nix-shell",
}

// progInfo is what the tables know about one program name, gathered so
// that a command looks its name up once.
type progInfo struct {
	kind      progKind
	wrap      *wrapSpec        // wrappers[name]
	wrapH     wrapHandler      // wrapHandlers[name]
	wrapStart wrapStartHandler // wrapStartHandlers[name]
	sub       *subWrap         // subWrappers[name]
	builtin   codeHandler      // builtinCodes[name]
	interp    *interpSpec      // interps[family(name)]
	code      codeHandler      // programCodes[family(name)]
	aliases   []flagAlias      // flagAliases[name]
	// fam is what a name of this family with a version suffix is (python3.12
	// is python, ksh93 is ksh): only shells and interpreters; nil for others.
	fam *progInfo
}

// unknownProg is the progInfo of names no table knows. It is never written.
var unknownProg = &progInfo{}

// progInfos holds a progInfo for every name in progKinds. It is filled at
// init, after the handler tables.
var progInfos map[string]*progInfo

func init() {
	initProgramCodes()
	initBuiltinCodes()
	initWrapHandlers()
	progInfos = make(map[string]*progInfo, len(progKinds))
	for name, k := range progKinds {
		fam := family(name)
		info := &progInfo{
			kind: k, wrap: wrappers[name], wrapH: wrapHandlers[name], wrapStart: wrapStartHandlers[name],
			sub: subWrappers[name], builtin: builtinCodes[name], interp: interps[fam], code: programCodes[fam],
			aliases: flagAliases[name],
		}
		switch {
		case k&kindShell != 0:
			info.fam = &progInfo{kind: kindShell}
		case k&kindInterp != 0:
			info.fam = &progInfo{kind: kindSpecial | kindInterp, interp: interps[name], code: programCodes[name]}
		}
		progInfos[name] = info
	}
}

// progInfoOf looks a program name up; shells and interpreters are also
// known by their family (python3.12 → python, ksh93 → ksh).
func progInfoOf(name string) *progInfo {
	if info := progInfos[name]; info != nil {
		return info
	}
	if n := len(name); n > 0 && (name[n-1] >= '0' && name[n-1] <= '9' || name[n-1] == '.') {
		if info := progInfos[family(name)]; info != nil && info.fam != nil {
			return info.fam
		}
	}
	return unknownProg
}

// command creates a Command from expanded words, reports it, and analyses
// what it runs. hook runs right after the command is added.
func (a *analyzer) command(c ctx, words []Word, hook func(int)) {
	if a.err != nil {
		return
	}
	if len(a.out.Commands) >= a.lim.MaxCommands {
		a.limitErr("more than %d commands", a.lim.MaxCommands)
		return
	}
	prog := words[0]
	idx := len(a.out.Commands)
	a.out.Commands = append(a.out.Commands, Command{})
	cmd := &a.out.Commands[idx]
	cmd.Program = prog.Value
	cmd.Redirects = c.redirs
	cmd.Wrappers = c.wrappers
	cmd.Via = c.via
	cmd.Depth = c.depth
	cmd.Parent = c.parent
	cmd.scope = c.scope
	if len(words) > 1 {
		cmd.Args = words[1:]
	}
	info := unknownProg
	if prog.Dynamic || prog.Glob {
		cmd.Dynamic = true
	} else {
		cmd.Name = programName(prog.Value)
		info = progInfoOf(cmd.Name)
	}
	cmd.Flags, cmd.Positionals = normalizeFlags(a, cmd.Name, info, cmd.Args)
	if a.quals > 0 { // only then can a word have zshQual
		for _, w := range words {
			if w.zshQual {
				cmd.Code = CodeInline
			}
		}
	}
	name, args := cmd.Name, cmd.Args
	// cmd may move when the slice grows: do not use it below.
	if hook != nil {
		hook(idx)
	}
	if !a.out.Commands[idx].Dynamic {
		a.dispatch(c, idx, name, info, args)
	}
}

// wrapped reports the command a wrapper runs.
func (a *analyzer) wrapped(c ctx, idx int, words []Word, via string, stdin stdinSrc) {
	if len(words) == 0 || a.err != nil {
		return
	}
	nc := a.childCtx(c, idx)
	if via != "" {
		nc.via = via
	}
	nc.stdin = stdin
	a.command(nc, words, nil)
}

// wrapperFlags recomputes a wrapper's Flags from its own options only: the
// wrapped command's words are all Positionals.
func (a *analyzer) wrapperFlags(idx, start int) {
	cmd := &a.out.Commands[idx]
	if start >= len(cmd.Args) {
		return
	}
	flags, pos := normalizeFlags(a, cmd.Name, progInfoOf(cmd.Name), cmd.Args[:start])
	out := a.wordsN(len(pos) + len(cmd.Args) - start)
	out = append(out, pos...)
	out = append(out, cmd.Args[start:]...)
	cmd.Flags, cmd.Positionals = flags, out
}

// scanFlags sets a wrapper's Flags from its scanned options; option values
// and the wrapped command's words are Positionals.
func (a *analyzer) scanFlags(idx int, args []Word, r *optScan) {
	cmd := &a.out.Commands[idx]
	flags := a.stringsN(len(r.events))
	pos := a.wordsN(len(args))
	for _, e := range r.events {
		flags = append(flags, e.name)
		if e.hasVal {
			pos = append(pos, e.val)
		}
	}
	if r.operands != nil {
		for _, i := range r.operands {
			pos = append(pos, args[i])
		}
	} else if r.start < len(args) {
		pos = append(pos, args[r.start:]...)
	}
	cmd.Flags, cmd.Positionals = sortDedup(flags), pos
}

// shellString analyses src as a shell script run by command idx in a new
// shell process (sh -c, su -c, ssh, watch, ...).
func (a *analyzer) shellString(c ctx, idx int, src Word, via string, args []Word) {
	if src.Dynamic {
		a.setCode(idx, CodeDynamic)
		return
	}
	nc := a.childCtx(c, idx)
	e := c.env.child()
	if args != nil {
		e.posKnown = true
		for i, w := range args {
			if w.Dynamic {
				e.posKnown, e.pos = false, nil
				break
			}
			if i == 0 {
				e.arg0, e.arg0Known = w.Value, true
			} else {
				e.pos = append(e.pos, w.Value)
			}
		}
	}
	a.nested(nc, src.Value, via, e)
}

// sameShellString analyses src in the current shell (eval, alias, trap).
func (a *analyzer) sameShellString(c ctx, idx int, src Word, via string) {
	if src.Dynamic {
		a.setCode(idx, CodeDynamic)
		c.env.poisoned = true
		return
	}
	a.nested(a.childCtx(c, idx), src.Value, via, c.env)
}

// joinWords joins words with spaces, as eval and ssh do.
func joinWords(ws []Word) Word {
	if len(ws) == 1 {
		return ws[0]
	}
	var b strings.Builder
	dyn := false
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.Value)
		dyn = dyn || w.Dynamic
	}
	if dyn {
		return dynWord()
	}
	return litWord(b.String())
}

// stdinCode handles an interpreter or shell that reads its program from
// stdin. A static here-document fed to a shell is analysed.
func (a *analyzer) stdinCode(c ctx, idx int, name string, shell bool) {
	a.stdinCodeX(c, idx, name, shell, false)
}

// stdinCodeX is stdinCode; explicit says the command line asks for stdin
// (python -, bash -s), which counts as piped code even when stdin is not
// redirected.
func (a *analyzer) stdinCodeX(c ctx, idx int, name string, shell, explicit bool) {
	if explicit && (c.stdin.kind == stdinTerm || c.stdin.kind == stdinNull) {
		a.setCode(idx, CodePiped)
		return
	}
	switch c.stdin.kind {
	case stdinPipe, stdinFile:
		a.setCode(idx, CodePiped)
	case stdinDoc:
		if shell && c.stdin.known {
			nc := a.childCtx(c, idx)
			nc.stdin = stdinSrc{kind: stdinNull}
			a.nested(nc, c.stdin.doc, name+" "+c.stdin.op, c.env.child())
		} else {
			a.setCode(idx, CodePiped)
		}
	}
}

// fileCode handles an interpreter given a program file: a process
// substitution or /dev/stdin is code we cannot see.
func (a *analyzer) fileCode(c ctx, idx int, name string, f Word, shell bool) {
	switch {
	case f.procSubst:
		a.setCode(idx, CodePiped)
	case f.Dynamic:
		a.setCode(idx, CodeDynamic)
	case f.Value == "-" || f.Value == "/dev/stdin" || f.Value == "/dev/fd/0" || f.Value == "/proc/self/fd/0":
		a.stdinCodeX(c, idx, name, shell, true)
	case strings.HasPrefix(f.Value, "/dev/fd/") || strings.HasPrefix(f.Value, "/proc/self/fd/"):
		a.setCode(idx, CodePiped)
	}
}

// builtinCodes maps names handled by dispatch itself to their handlers. It
// is filled at init (initBuiltinCodes): the handlers reach dispatch again
// through nested commands.
var builtinCodes map[string]codeHandler

func initBuiltinCodes() {
	builtinCodes = map[string]codeHandler{}
	add := func(h codeHandler, names ...string) {
		for _, n := range names {
			builtinCodes[n] = h
		}
	}
	add((*analyzer).evalCode, wEval)
	add((*analyzer).sourceCode, wSource, ".")
	add((*analyzer).aliasCode, "alias")
	add((*analyzer).trapCode, "trap")
	add(func(a *analyzer, c ctx, _ int, name string, args []Word) { a.varBuiltin(c, name, args) },
		"read", "mapfile", "readarray", "getopts", "unset", wWait, wPrintf, wExport, wReadonly, wDeclare, wTypeset, wLocal)
	add(setBuiltin, "set")
	add(func(_ *analyzer, c ctx, _ int, _ string, _ []Word) { c.env.posKnown = false }, "shift")
	add((*analyzer).atCode, "at", "batch")
	add((*analyzer).findCmd, "find", "gfind", "bfs")
	add((*analyzer).crontabCode, "crontab")
}

// dispatch analyses what a command runs, by program name (info is
// progInfoOf(name)).
func (a *analyzer) dispatch(c ctx, idx int, name string, info *progInfo, args []Word) {
	if a.err != nil {
		return
	}
	kind := info.kind
	if kind&kindShell != 0 {
		a.shellCmd(c, idx, name, args)
		return
	}
	if kind&kindWrapper != 0 {
		if info.wrap != nil {
			a.wrapperCmd(c, idx, name, info, args)
			return
		}
	}
	if kind&kindSubWrapper != 0 {
		a.subWrapperCmd(c, idx, name, info.sub, args)
		if name != wGit && name != "docker" && name != "podman" && name != wKubectl {
			return
		}
	}
	if f, ok := a.funcs[name]; ok {
		// A call of a function defined in the script: it may assign any
		// variable.
		if f {
			c.env.poisoned = true
		} else {
			c.env.softPoison()
		}
	}
	if info.builtin != nil {
		info.builtin(a, c, idx, name, args)
	} else if kind&kindSpecial != 0 {
		a.programCode(c, idx, name, info, args)
	}
}

// evalCode analyses eval's arguments as a string run in the same shell.
func (a *analyzer) evalCode(c ctx, idx int, _ string, args []Word) {
	if len(args) > 0 {
		a.sameShellString(c, idx, joinWords(args), wEval)
	}
}

// sourceCode handles source and .: the file may assign any variable.
func (a *analyzer) sourceCode(c ctx, idx int, name string, args []Word) {
	c.env.poisoned = true
	if len(args) > 0 {
		a.fileCode(c, idx, name, args[0], true)
	}
}

// aliasCode analyses the values of alias definitions.
func (a *analyzer) aliasCode(c ctx, idx int, _ string, args []Word) {
	for _, w := range args {
		if w.Dynamic {
			a.setCode(idx, CodeDynamic)
			continue
		}
		if _, v, ok := strings.Cut(w.Value, "="); ok && strings.TrimSpace(v) != "" {
			a.sameShellString(c, idx, litWord(v), "alias")
		}
	}
}

// trapCode analyses a trap's action.
func (a *analyzer) trapCode(c ctx, idx int, _ string, args []Word) {
	i := 0
	for i < len(args) && !args[i].Dynamic && strings.HasPrefix(args[i].Value, "-") && args[i].Value != "-" {
		if args[i].Value == "--" {
			i++
			break
		}
		i++
	}
	if len(args)-i >= 2 {
		if act := args[i]; act.Dynamic || (act.Value != "" && act.Value != "-") {
			a.sameShellString(c, idx, act, "trap")
		}
	}
}

// setBuiltin handles set: operands replace the positional parameters.
func setBuiltin(_ *analyzer, c ctx, _ int, _ string, args []Word) {
	for _, w := range args {
		if w.Dynamic || w.Value == "--" || (!strings.HasPrefix(w.Value, "-") && !strings.HasPrefix(w.Value, "+")) {
			c.env.posKnown = false
			break
		}
	}
}

// atCode handles at and batch: without -f the job is read from stdin.
func (a *analyzer) atCode(c ctx, idx int, name string, args []Word) {
	for _, w := range args {
		if w.Value == "-f" || strings.HasPrefix(w.Value, "-f") && len(w.Value) > 2 {
			return
		}
	}
	a.stdinCode(c, idx, name, true)
}

// crontabCode handles crontab -: the table is read from stdin.
func (a *analyzer) crontabCode(c ctx, idx int, name string, args []Word) {
	if len(args) > 0 && args[len(args)-1].Value == "-" {
		a.stdinCode(c, idx, name, true)
	}
}

// varBuiltin handles builtins that assign the variables they name.
func (a *analyzer) varBuiltin(c ctx, name string, args []Word) {
	for i, w := range args {
		if w.Dynamic {
			if name == wDeclare || name == wTypeset || name == wLocal {
				c.env.poisoned = true
			}
			continue
		}
		v := w.Value
		if strings.HasPrefix(v, "-") {
			if name == wPrintf && v != "-v" {
				return // printf assigns only with -v
			}
			if strings.ContainsRune(v, 'n') && (name == wDeclare || name == wTypeset || name == wLocal) {
				c.env.poisoned = true
			}
			continue
		}
		if name == wPrintf && (i == 0 || args[i-1].Value != "-v") {
			continue
		}
		n, val, hasEq := strings.Cut(v, "=")
		a.subscript(c, Word{Value: n})
		if j := strings.IndexByte(n, '['); j >= 0 {
			n = n[:j]
		}
		if hasEq && (name == wExport || name == wReadonly || name == wDeclare || name == wTypeset || name == wLocal) {
			c.env.set(n, val, true)
			continue
		}
		if name == wExport || name == wReadonly {
			continue
		}
		c.env.unknown(n)
	}
}

// shellCmd handles sh, bash, zsh, ...: -c STRING is analysed; a script
// file is just a command; no script means the program comes from stdin.
func (a *analyzer) shellCmd(c ctx, idx int, name string, args []Word) {
	cflag, sflag := false, false
	var cmdStr *Word
	i := 0
loop:
	for ; i < len(args); i++ {
		w := args[i]
		if w.procSubst {
			break loop // a file name
		}
		if w.Dynamic {
			a.setCode(idx, CodeDynamic) // may be -c
			return
		}
		v := w.Value
		switch {
		case v == "--" || v == "-":
			i++
			break loop
		case len(v) < 2 || (v[0] != '-' && v[0] != '+'):
			break loop
		case strings.HasPrefix(v, "--"):
			opt, val, hasEq := strings.Cut(v[2:], "=")
			switch opt {
			case wCommand, "init-command": // fish
				if hasEq {
					w := litWord(val)
					cmdStr = &w
				} else if i+1 < len(args) {
					i++
					w := args[i]
					cmdStr = &w
				}
				if opt == wCommand {
					cflag = true
					if cmdStr != nil {
						a.shellString(c, idx, *cmdStr, name+" -c", nil)
						return
					}
				} else if cmdStr != nil {
					a.shellString(c, idx, *cmdStr, name+" -C", nil)
					cmdStr = nil
				}
			case "rcfile", "init-file":
				if !hasEq {
					i++
				}
			}
			continue
		}
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case 'c':
				cflag = true
			case 's':
				sflag = true
			case 'o', 'O':
				if j == len(v)-1 {
					i++
				}
				j = len(v)
			case 'C':
				if family(name) == "fish" {
					if i+1 < len(args) {
						i++
						a.shellString(c, idx, args[i], name+" -C", nil)
					}
					j = len(v)
				}
			}
		}
	}
	a.wrapperFlags(idx, i)
	if cflag {
		if i >= len(args) {
			return
		}
		a.shellString(c, idx, args[i], name+" -c", append([]Word(nil), args[i+1:]...))
		return
	}
	if i < len(args) && !sflag {
		a.fileCode(c, idx, name, args[i], true)
		return
	}
	a.stdinCodeX(c, idx, name, true, sflag)
}

// wrapKind says what a wrapper does with its operands.
type wrapKind uint8

const (
	wrapCmd      wrapKind = iota // operands are a command
	wrapSkip1                    // one operand (duration, directory, user, lock file, mask) then a command
	wrapShellCmd                 // operands are joined and run by a shell
)

type wrapSpec struct {
	opts optSpec
	kind wrapKind
	// shellIfNone: with no command, an interactive shell runs (and reads
	// stdin).
	shellIfNone bool
}

var wrappers = map[string]*wrapSpec{
	"sudo": {opts: optSpec{
		shortVal: "aCcDgpRrTtUu", shortOpt: "h", shortNone: "ABbEeHiKklNnPSsVv",
		longVal:  []string{"close-from", "login-class", "chdir", "group", "host", "prompt", "chroot", "role", "type", "command-timeout", "other-user", wUser},
		longNone: []string{"askpass", "background", "bell", "edit", wHelp, "login", "list", "non-interactive", "preserve-groups", "remove-timestamp", "reset-timestamp", "set-home", wShell, "stdin", "validate", wVersion},
		longOpt:  []string{"preserve-env"},
	}},
	"doas":     {opts: optSpec{shortVal: "uC", shortNone: "nsL"}},
	"pkexec":   {opts: optSpec{longVal: []string{wUser}, longNone: []string{"disable-internal-agent", wHelp, wVersion, "keep-cwd"}}},
	wEnv:       {opts: optSpec{shortVal: "uCSPa", shortNone: "i0v", dashIsOpt: true, longVal: []string{"unset", "chdir", "split-string", "argv0"}, longNone: []string{"ignore-environment", "null", wDebug, wHelp, wVersion, "list-signal-handling"}, longOpt: []string{"default-signal", "ignore-signal", "block-signal"}}},
	wCommand:   {opts: optSpec{shortNone: "pvV"}},
	"builtin":  {},
	wExec:      {opts: optSpec{shortVal: "a", shortNone: "cl"}},
	"nohup":    {},
	wTime:      {opts: optSpec{shortVal: "fo", shortNone: "apqv", longVal: []string{"format", "output"}, longNone: []string{"append", "portability", wVerbose, wQuiet, wHelp, wVersion}}},
	"timeout":  {kind: wrapSkip1, opts: optSpec{shortVal: "sk", shortNone: "fpv", longVal: []string{"signal", "kill-after"}, longNone: []string{"foreground", "preserve-status", wVerbose, wHelp, wVersion}}},
	"nice":     {opts: optSpec{shortVal: "n", numeric: true, longVal: []string{"adjustment"}, longNone: []string{wHelp, wVersion}}},
	"ionice":   {opts: optSpec{shortVal: "cnpPu", shortNone: "th", longVal: []string{"class", "classdata", wPid, "pgid", "uid"}, longNone: []string{"ignore", wHelp, wVersion}}},
	"stdbuf":   {opts: optSpec{shortVal: "ioe", longVal: []string{"input", "output", "error"}, longNone: []string{wHelp, wVersion}}},
	"setsid":   {opts: optSpec{shortNone: "cfw", longNone: []string{"ctty", "fork", wWait, wHelp, wVersion}}},
	"unbuffer": {opts: optSpec{shortNone: "p"}},
	"chroot":   {kind: wrapSkip1, shellIfNone: true, opts: optSpec{longVal: []string{"userspec", "groups"}, longNone: []string{"skip-chdir", wHelp, wVersion}}},
	"flock":    {kind: wrapSkip1, opts: optSpec{shortVal: "wE", shortNone: "sexnouFhV", longVal: []string{"timeout", wWait, "conflict-exit-code"}, longNone: []string{"shared", "exclusive", "nonblock", "nb", "close", "unlock", "no-fork", wVerbose, wHelp, wVersion}}},
	"xargs": {opts: optSpec{
		shortVal: "aEdILnPs", shortOpt: "eil", shortNone: "0oprtx",
		longVal:  []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"},
		longOpt:  []string{"eof", "replace", "max-lines"},
		longNone: []string{"null", wInteractive, "no-run-if-empty", wVerbose, "exit", "open-tty", "show-limits", wHelp, wVersion},
	}},
	"watch": {kind: wrapShellCmd, opts: optSpec{
		shortVal: "nq", shortOpt: "d", shortNone: "bceghprtwxC",
		longVal:  []string{"interval", "equexit"},
		longOpt:  []string{"differences"},
		longNone: []string{"beep", "color", "no-color", "errexit", "chgexit", wExec, "precise", "no-title", "no-wrap", "no-linewrap", "no-rerun", wHelp, wVersion},
	}},
	"su": {shellIfNone: true, opts: optSpec{
		shortVal: "cCgGsw", shortNone: "lmpPfhV", dashIsOpt: true, permute: true,
		longVal:  []string{wCommand, "session-command", "group", "supp-group", wShell, "whitelist-environment"},
		longNone: []string{"login", "preserve-environment", "pty", "fast", wHelp, wVersion},
	}},
	"runuser": {shellIfNone: true, opts: optSpec{
		shortVal: "cCgGswu", shortNone: "lmpPfhV", dashIsOpt: true, permute: true,
		longVal:  []string{wCommand, "session-command", "group", "supp-group", wShell, "whitelist-environment", wUser},
		longNone: []string{"login", "preserve-environment", "pty", "fast", wHelp, wVersion},
	}},
	"ssh": {opts: optSpec{shortVal: "BbcDEeFIiJLlmOopQRSWw", shortNone: "46AaCfGgKkMNnqsTtVvXxYy"}},
	"script": {shellIfNone: true, opts: optSpec{
		shortVal: "cEIOBTmo", shortOpt: "t", shortNone: "aefqhVF", permute: true,
		longVal:  []string{wCommand, "echo", "log-in", "log-out", "log-io", "log-timing", "logging-format", "output-limit"},
		longOpt:  []string{"timing"},
		longNone: []string{"append", "return", "flush", wForce, wQuiet, wHelp, wVersion},
	}},
	"busybox":          {},
	"parallel":         {kind: wrapShellCmd},
	"sg":               {kind: wrapShellCmd},
	"chrt":             {opts: optSpec{shortVal: "TPD", shortNone: "abdefiomrRpvh", longNone: []string{"all-tasks", "batch", "deadline", "fifo", "idle", "other", "rr", "reset-on-fork", wPid, wVerbose, "max", wHelp, wVersion}, longVal: []string{"sched-runtime", "sched-period", "sched-deadline"}}},
	"taskset":          {kind: wrapSkip1, opts: optSpec{shortNone: "acpVh", longNone: []string{"all-tasks", "cpu-list", wPid, wHelp, wVersion}}},
	"unshare":          {shellIfNone: true, opts: optSpec{shortVal: "SGRwl", shortOpt: "muinpUCT", shortNone: "frch", longVal: []string{"setgroups", "map-user", "map-group", "map-users", "map-groups", "propagation", "root", "wd", "setuid", "setgid", "load-interp"}, longOpt: []string{"mount", "uts", "ipc", "net", wPid, wUser, "cgroup", wTime, "mount-proc", "kill-child", "monotonic", "boottime", "map-auto", "map-subids"}, longNone: []string{"fork", "map-root-user", "map-current-user", "keep-caps", wHelp, wVersion}}},
	"nsenter":          {shellIfNone: true, opts: optSpec{shortVal: "tSG", shortOpt: "mutinpUCTrw", shortNone: "aFZ", longVal: []string{"target", "setuid", "setgid"}, longOpt: []string{"mount", "uts", "ipc", "net", wPid, wUser, "cgroup", wTime, "root", "wd", wEnv}, longNone: []string{"all", "preserve-credentials", "no-fork", "follow-context", wHelp, wVersion}}},
	"strace":           {opts: optSpec{shortVal: "abeEIoOpPsSuUX", shortNone: "cCdDfFhiknqrtTvVwxyYz"}},
	"ltrace":           {opts: optSpec{shortVal: "aAeEfFlLnopsSuwxX", shortNone: "bcCdhiKrStTV"}},
	"fakeroot":         {opts: optSpec{shortVal: "sil", shortNone: "uhv", longVal: []string{"lib", "faked"}, longNone: []string{"unknown-is-real", wHelp, wVersion}}},
	"firejail":         {},
	"bwrap":            {opts: optSpec{multiVal: true}},
	"torsocks":         {opts: optSpec{shortVal: "uapP", shortNone: "idqhV6"}},
	"proxychains":      {opts: optSpec{shortVal: "f", shortNone: "q"}},
	"proxychains4":     {opts: optSpec{shortVal: "f", shortNone: "q"}},
	"sshpass":          {opts: optSpec{shortVal: "pfdP", shortNone: "ehvV"}},
	"caffeinate":       {opts: optSpec{shortVal: "tw", shortNone: "dimsu"}},
	"xvfb-run":         {opts: optSpec{shortVal: "fnlpsew", shortNone: "ah", longVal: []string{"auth-file", "server-num", "error-file", "xauth-protocol", "server-args", wWait}, longNone: []string{"auto-servernum", "listen-tcp", wHelp}}},
	"rlwrap":           {opts: optSpec{shortVal: "aAbCDeEfFgHlMoOpPqsSwz", shortNone: "cihmnrRtUvW"}},
	"gosu":             {kind: wrapSkip1},
	"su-exec":          {kind: wrapSkip1},
	"setpriv":          {},
	"systemd-run":      {opts: optSpec{shortVal: "pEMHu", shortNone: "qrtPGSdh", longVal: []string{"unit", "property", "description", "slice", "uid", "gid", "nice", "working-directory", "setenv", "host", "machine", "on-active", "on-boot", "on-startup", "on-unit-active", "on-unit-inactive", "on-calendar", "timer-property", "path-property", "socket-property", "service-type"}}},
	"catchsegv":        {},
	"numactl":          {opts: optSpec{shortVal: "iPpCNmw", shortNone: "alsHtSbv", longOpt: []string{"all", "interleave", "preferred", "physcpubind", "cpunodebind", "membind", "localalloc", "show", "hardware"}}},
	"prlimit":          {opts: optSpec{shortVal: "po", shortNone: "hvV", longOpt: []string{"core", "data", "fsize", "memlock", "rss", "nofile", "stack", "cpu", "nproc", "as", "locks", "sigpending", "msgqueue", "nice", "rtprio", "rttime"}, longVal: []string{wPid, "output"}, longNone: []string{"noheadings", "raw", wVerbose, wHelp, wVersion}}},
	"cgexec":           {opts: optSpec{shortVal: "g", longNone: []string{"sticky"}}},
	"runcon":           {opts: optSpec{shortVal: "turl", shortNone: "c", longVal: []string{"type", wUser, "role", "range"}, longNone: []string{"compute", wHelp, wVersion}}},
	"systemd-inhibit":  {opts: optSpec{longVal: []string{"what", "who", "why", "mode"}, longNone: []string{"list", wHelp, wVersion, "no-pager", "no-legend"}}},
	"flatpak-spawn":    {opts: optSpec{longNone: []string{"host", "watch-bus", "expose-pids", "share-pids", "clear-env", "latest-version", "no-network", "sandbox"}}},
	"dbus-run-session": {opts: optSpec{longOpt: []string{"config-file", "dbus-daemon"}}},
	"tini":             {opts: optSpec{shortVal: "pe", shortNone: "svwglh"}},
	"dumb-init":        {opts: optSpec{shortVal: "r", shortNone: "cvVh", longVal: []string{"rewrite"}, longNone: []string{"single-child", wVerbose, wVersion, wHelp}}},
	"catatonit":        {opts: optSpec{shortNone: "gpLPhV"}},
	"entr":             {opts: optSpec{shortNone: "acdnprsz"}},
	"chpst":            {opts: optSpec{shortVal: "uUbenlLmdofcrt", shortNone: "vP012"}},
	"run-one":          {},
	"daemonize":        {opts: optSpec{shortVal: "acepuolE", shortNone: "v"}},
	"s6-setuidgid":     {kind: wrapSkip1},
	"npx":              {opts: optSpec{shortVal: "pc", shortNone: "yq", longVal: []string{wPackage, "call", wShell, "node-options", "cache"}, longNone: []string{"yes", "no", wQuiet, "ignore-existing", "no-install"}}},
	"bunx":             {},
	"pnpx":             {},
	"dotenv":           {opts: optSpec{shortVal: "ecv", shortNone: "po", longNone: []string{wDebug, "override"}}},
	"envchain":         {kind: wrapSkip1},
	"nocorrect":        {},
	"noglob":           {},
	"valgrind":         {},
	"dbus-launch":      {},
}

// subWrap describes a program whose subcommand runs a command:
// poetry run CMD, bundle exec CMD, docker exec CONTAINER CMD, ...
type subWrap struct {
	subs   []string // subcommands that run a command
	skip   int      // operands after the subcommand before the command
	opts   optSpec  // the subcommand's options
	dashes bool     // the command follows "--" (kubectl exec)
	via    string   // Via for the command ("" for a local wrapper)
}

var subWrappers = map[string]*subWrap{
	"poetry":     {subs: []string{wRun}},
	"pipenv":     {subs: []string{wRun}},
	"uv":         {subs: []string{wRun}, opts: optSpec{longVal: []string{"with", "python", "project", "directory", wEnvFile, "group", "extra", wPackage, "index", "index-url"}, shortVal: "p"}},
	"pdm":        {subs: []string{wRun}},
	"hatch":      {subs: []string{wRun}},
	"rye":        {subs: []string{wRun}},
	"conda":      {subs: []string{wRun}, opts: optSpec{shortVal: "np", longVal: []string{"name", "prefix", "cwd"}}},
	"mamba":      {subs: []string{wRun}, opts: optSpec{shortVal: "np", longVal: []string{"name", "prefix", "cwd"}}},
	"micromamba": {subs: []string{wRun}, opts: optSpec{shortVal: "np", longVal: []string{"name", "prefix", "cwd"}}},
	"bundle":     {subs: []string{wExec}},
	"npm":        {subs: []string{wExec, "x"}, opts: optSpec{shortVal: "cw", longVal: []string{wPackage, "call", "workspace"}}},
	"pnpm":       {subs: []string{wExec, "dlx"}, opts: optSpec{shortVal: "cC", longVal: []string{wPackage, "filter", "dir"}}},
	"yarn":       {subs: []string{wExec, "dlx"}, opts: optSpec{shortVal: "p", longVal: []string{wPackage}}},
	"direnv":     {subs: []string{wExec}, skip: 1},
	"aws-vault":  {subs: []string{wExec}, skip: 1, opts: optSpec{shortVal: "dt", longVal: []string{"duration", "mfa-token", "region", "server"}}},
	"op":         {subs: []string{wRun}, opts: optSpec{longVal: []string{wEnvFile, "account"}}},
	"doppler":    {subs: []string{wRun}, opts: optSpec{shortVal: "pc", longVal: []string{"project", "config", wCommand, "token"}}},
	"infisical":  {subs: []string{wRun}, opts: optSpec{longVal: []string{wEnv, "projectId", "path", "token", wCommand}}},
	"chamber":    {subs: []string{wExec}, skip: 1},
	"nix":        {subs: []string{"develop", wShell}, opts: optSpec{longVal: []string{wCommand}}},
	"docker":     {subs: []string{wExec}, skip: 1, via: "docker exec", opts: optSpec{shortVal: "euw", shortNone: "dit", longVal: []string{wEnv, wEnvFile, wUser, "workdir", "detach-keys"}, longNone: []string{"detach", wInteractive, "tty", "privileged"}}},
	"podman":     {subs: []string{wExec}, skip: 1, via: "podman exec", opts: optSpec{shortVal: "euw", shortNone: "dit", longVal: []string{wEnv, wEnvFile, wUser, "workdir", "detach-keys", "preserve-fds"}, longNone: []string{"detach", wInteractive, "tty", "privileged", "latest"}}},
	wKubectl:     {subs: []string{wExec, wDebug, wRun}, dashes: true, via: wKubectl},
	"oc":         {subs: []string{wExec, "rsh", wDebug}, dashes: true, via: "oc"},
}

// subWrapperCmd handles programs whose subcommand runs a command.
func (a *analyzer) subWrapperCmd(c ctx, idx int, name string, sw *subWrap, args []Word) {
	sub := -1
	for i, w := range args {
		if w.Dynamic {
			return
		}
		for _, s := range sw.subs {
			if w.Value == s {
				sub = i
				break
			}
		}
		if sub >= 0 || (!strings.HasPrefix(w.Value, "-") && i > 2) {
			break
		}
	}
	if sub < 0 {
		return
	}
	rest := args[sub+1:]
	via := sw.via
	if via != "" && via == name {
		via = name + " " + args[sub].Value
	}
	if sw.dashes {
		for i, w := range rest {
			if !w.Dynamic && w.Value == "--" {
				a.wrapped(c, idx, rest[i+1:], via, c.stdin)
				return
			}
		}
		if name == wKubectl || name == "oc" {
			return // no "--": no command (kubectl run IMAGE, interactive shells)
		}
	}
	if name == "nix" {
		// nix develop/shell ... -c CMD or --command CMD
		for i, w := range rest {
			if (w.Value == "-c" || w.Value == "--command") && i+1 < len(rest) {
				a.wrapped(c, idx, rest[i+1:], "", c.stdin)
				return
			}
		}
		return
	}
	var r optScan
	sw.opts.scanInto(rest, &r)
	for _, start := range append([]int{r.start}, r.alts...) {
		start += sw.skip
		if start >= len(rest) {
			continue
		}
		cmd := rest[start:]
		if len(cmd) > 0 && cmd[0].Value == "--" && !cmd[0].Dynamic {
			cmd = cmd[1:]
		}
		a.wrapped(c, idx, cmd, via, c.stdin)
	}
}

// wrapHandler handles a wrapper whose command line is not parsed by its
// wrapSpec's options.
type wrapHandler func(a *analyzer, c ctx, idx int, spec *wrapSpec, args []Word)

// wrapStep says what wrapperCmd does after a wrapStartHandler.
type wrapStep int

const (
	stepWrap wrapStep = iota // analyse the rest as the wrapped command
	stepNext                 // go on to the next parse
	stepDone                 // stop
)

// wrapState is what a wrapStartHandler knows of the parse.
type wrapState struct {
	name string
	args []Word
	r    *optScan
	si   int // index of the parse: 0 is the main one, others are alternatives
}

// wrapStartHandler adjusts the words after a wrapper's options for one
// parse.
type wrapStartHandler func(a *analyzer, c ctx, idx int, s wrapState, rest []Word) ([]Word, wrapStep)

// wrapHandlers and wrapStartHandlers are filled at init (initWrapHandlers):
// the handlers reach wrapperCmd again through nested commands.
var (
	wrapHandlers      map[string]wrapHandler
	wrapStartHandlers map[string]wrapStartHandler
)

func initWrapHandlers() {
	wrapHandlers = map[string]wrapHandler{
		"xargs":    (*analyzer).xargsCmd,
		"busybox":  (*analyzer).busyboxCmd,
		"ssh":      (*analyzer).sshCmd,
		"parallel": func(a *analyzer, c ctx, idx int, _ *wrapSpec, args []Word) { a.parallelCmd(c, idx, args) },
		"sg":       (*analyzer).sgCmd,
	}
	wrapStartHandlers = map[string]wrapStartHandler{
		wCommand:  commandStart,
		wEnv:      (*analyzer).envStart,
		"sudo":    (*analyzer).sudoStart,
		"doas":    (*analyzer).doasStart,
		wTime:     (*analyzer).timeStart,
		"flock":   (*analyzer).flockStart,
		"watch":   (*analyzer).watchStart,
		"su":      (*analyzer).suStart,
		"runuser": (*analyzer).suStart,
		"script":  (*analyzer).scriptStart,
		"chrt":    chrtStart,
		"taskset": tasksetStart,
		"ionice":  ioniceStart,
	}
}

// wrapperCmd handles commands that run another command (info.wrap is
// not nil).
func (a *analyzer) wrapperCmd(c ctx, idx int, name string, info *progInfo, args []Word) {
	spec := info.wrap
	if info.wrapH != nil {
		info.wrapH(a, c, idx, spec, args)
		return
	}
	var r optScan
	spec.opts.scanInto(args, &r)
	starts := []int{r.start}
	starts = append(starts, r.alts...)
	if spec.opts.permute {
		starts = []int{len(args)}
	}
	a.scanFlags(idx, args, &r)
	startH := info.wrapStart
	for si, start := range starts {
		if start > len(args) {
			continue
		}
		rest, step := args[start:], stepWrap
		if startH != nil {
			rest, step = startH(a, c, idx, wrapState{name: name, args: args, r: &r, si: si}, rest)
		}
		switch step {
		case stepDone:
			return
		case stepNext:
			continue
		}
		a.wrapRest(c, idx, name, spec, si, rest)
	}
}

// wrapRest analyses the command a wrapper runs, for one parse.
func (a *analyzer) wrapRest(c ctx, idx int, name string, spec *wrapSpec, si int, rest []Word) {
	if spec.kind == wrapSkip1 {
		if len(rest) == 0 {
			return
		}
		rest = rest[1:]
	}
	if len(rest) == 0 {
		if spec.shellIfNone && si == 0 {
			a.stdinCode(c, idx, name, true)
		}
		return
	}
	a.wrapped(c, idx, rest, "", c.stdin)
}

// busyboxCmd handles busybox APPLET ARGS...
func (a *analyzer) busyboxCmd(c ctx, idx int, _ *wrapSpec, args []Word) {
	if len(args) > 0 && !strings.HasPrefix(args[0].Value, "-") {
		a.wrapperFlags(idx, 0)
		a.wrapped(c, idx, args, "", c.stdin)
	}
}

// sgCmd handles sg [-] [group [-c] command]: the command runs through
// /bin/sh -c.
func (a *analyzer) sgCmd(c ctx, idx int, _ *wrapSpec, args []Word) {
	i := 0
	if i < len(args) && args[i].Value == "-" {
		i++
	}
	i++ // group
	if i < len(args) && args[i].Value == "-c" {
		i++
	}
	if i < len(args) {
		a.wrapperFlags(idx, i)
		a.shellString(c, idx, joinWords(args[i:]), "sg", nil)
	}
}

// commandStart: command -v only looks the name up.
func commandStart(_ *analyzer, _ ctx, _ int, s wrapState, rest []Word) ([]Word, wrapStep) {
	if s.r.has("v", "V") {
		return rest, stepDone
	}
	return rest, stepWrap
}

// envStart skips env's NAME=value words and handles env -S.
func (a *analyzer) envStart(c ctx, idx int, s wrapState, rest []Word) ([]Word, wrapStep) {
	rest = a.assignPrefix(c, idx, rest, s.si == 0)
	if s.si == 0 {
		if sv, ok := s.r.val("S", "split-string"); ok {
			a.envSplit(c, idx, sv, rest)
			return rest, stepDone
		}
	}
	return rest, stepWrap
}

// sudoStart skips sudo's NAME=value words and handles the options that run
// no command or a shell.
func (a *analyzer) sudoStart(c ctx, idx int, s wrapState, rest []Word) ([]Word, wrapStep) {
	rest = a.assignPrefix(c, idx, rest, s.si == 0)
	if s.si != 0 {
		return rest, stepWrap
	}
	r := s.r
	if r.has("e", "edit", "v", "validate", "k", "K", "remove-timestamp", "reset-timestamp") && len(rest) == 0 {
		return rest, stepDone
	}
	if r.has("s", "i", wShell, "login") {
		if len(rest) == 0 {
			a.stdinCode(c, idx, s.name, true)
		} else {
			via := "sudo -s"
			if r.has("i", "login") {
				via = "sudo -i"
			}
			a.shellString(c, idx, joinWords(rest), via, nil)
		}
		return rest, stepDone
	}
	return rest, stepWrap
}

// doasStart: doas -s without a command runs a shell.
func (a *analyzer) doasStart(c ctx, idx int, s wrapState, rest []Word) ([]Word, wrapStep) {
	if s.si == 0 && s.r.has("s") && len(rest) == 0 {
		a.stdinCode(c, idx, s.name, true)
		return rest, stepDone
	}
	return rest, stepWrap
}

// timeStart records time -o FILE as a redirection.
func (a *analyzer) timeStart(_ ctx, idx int, s wrapState, rest []Word) ([]Word, wrapStep) {
	if f, ok := s.r.val("o", "output"); ok && s.si == 0 {
		a.addCmdRedirect(idx, Redirect{Op: "-o", FD: -1, Target: f, Write: true})
	}
	return rest, stepWrap
}

// flockStart handles flock LOCK -c COMMAND.
func (a *analyzer) flockStart(c ctx, idx int, _ wrapState, rest []Word) ([]Word, wrapStep) {
	if len(rest) > 1 && (rest[1].Value == "-c" || rest[1].Value == "--command") {
		if len(rest) > 2 {
			a.shellString(c, idx, rest[2], "flock -c", nil)
		}
		return rest, stepNext
	}
	return rest, stepWrap
}

// watchStart: watch runs its command through a shell unless -x.
func (a *analyzer) watchStart(c ctx, idx int, s wrapState, rest []Word) ([]Word, wrapStep) {
	if s.r.has("x", wExec) {
		a.wrapped(c, idx, rest, "watch", c.stdin)
	} else if len(rest) > 0 {
		a.shellString(c, idx, joinWords(rest), "watch", nil)
	}
	return rest, stepNext
}

// suStart handles su and runuser: -c COMMAND, runuser -u USER COMMAND, or
// a shell.
func (a *analyzer) suStart(c ctx, idx int, s wrapState, rest []Word) ([]Word, wrapStep) {
	r := s.r
	if cmd, ok := r.val("c", wCommand, "C", "session-command"); ok {
		a.shellString(c, idx, cmd, s.name+" -c", nil)
		return rest, stepDone
	}
	if s.name == "runuser" && r.has("u", wUser) && len(r.operands) > 0 {
		a.wrapped(c, idx, s.args[r.operands[0]:], "", c.stdin)
		return rest, stepDone
	}
	a.stdinCode(c, idx, s.name, true)
	return rest, stepDone
}

// scriptStart handles script [-c COMMAND] [FILE].
func (a *analyzer) scriptStart(c ctx, idx int, s wrapState, rest []Word) ([]Word, wrapStep) {
	r := s.r
	if cmd, ok := r.val("c", wCommand); ok {
		a.shellString(c, idx, cmd, "script -c", nil)
	} else {
		a.stdinCode(c, idx, s.name, true)
	}
	if len(r.operands) > 0 {
		a.addCmdRedirect(idx, Redirect{Op: ">", FD: -1, Target: s.args[r.operands[0]], Write: true})
	}
	return rest, stepDone
}

// chrtStart: chrt -p runs nothing; a priority precedes the command.
func chrtStart(_ *analyzer, _ ctx, _ int, s wrapState, rest []Word) ([]Word, wrapStep) {
	if s.r.has("p", wPid) {
		return rest, stepDone
	}
	if len(rest) > 0 && isDigits(rest[0].Value) {
		rest = rest[1:]
	}
	return rest, stepWrap
}

// tasksetStart: taskset -p runs nothing.
func tasksetStart(_ *analyzer, _ ctx, _ int, s wrapState, rest []Word) ([]Word, wrapStep) {
	if s.r.has("p", wPid) {
		return rest, stepDone
	}
	return rest, stepWrap
}

// ioniceStart: ionice -p/-P/-u without a command runs nothing.
func ioniceStart(_ *analyzer, _ ctx, _ int, s wrapState, rest []Word) ([]Word, wrapStep) {
	if s.r.has("p", "P", "u", wPid, "pgid", "uid") && len(rest) == 0 {
		return rest, stepDone
	}
	return rest, stepWrap
}

func (a *analyzer) addCmdRedirect(idx int, r Redirect) {
	cmd := &a.out.Commands[idx]
	cmd.Redirects = a.concatRedirs(cmd.Redirects, []Redirect{r})
	a.out.Redirects = append(a.out.Redirects, r)
}

// assignPrefix skips NAME=value words before a command (env, sudo) and
// records them; record is false for alternative parses.
func (a *analyzer) assignPrefix(c ctx, idx int, words []Word, record bool) []Word {
	i := 0
	for i < len(words) {
		w := words[i]
		if w.Dynamic {
			break
		}
		n, v, ok := strings.Cut(w.Value, "=")
		if !ok || !validName(n) {
			break
		}
		if record {
			vw := litWord(v)
			a.recordAssign(n, vw, idx)
			a.envString(c, n, vw, idx)
		}
		i++
	}
	return words[i:]
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || i > 0 && ch >= '0' && ch <= '9' {
			continue
		}
		return false
	}
	return true
}

// envSplit handles env -S STRING: the string is split into words that
// continue env's command line.
func (a *analyzer) envSplit(c ctx, idx int, s Word, rest []Word) {
	if s.Dynamic {
		a.setCode(idx, CodeDynamic)
		return
	}
	words, ok := splitEnvString(s.Value)
	if !ok {
		a.setCode(idx, CodeDynamic)
		return
	}
	all := append(words, rest...)
	if len(all) == 0 {
		return
	}
	a.words += len(words)
	if a.words > a.lim.MaxWords {
		a.limitErr("more than %d words", a.lim.MaxWords)
		return
	}
	// Analyse "env <split words> <rest>" as a nested env command.
	nc := a.childCtx(c, idx)
	nc.via = "env -S"
	nc.depth = c.depth + 1
	if nc.depth > a.lim.MaxDepth {
		a.limitErr("nesting deeper than %d (env -S)", a.lim.MaxDepth)
		return
	}
	a.command(nc, append([]Word{litWord(wEnv)}, all...), nil)
}

// splitEnvString splits env -S's string: whitespace-separated, with '...'
// and "..." quoting and backslash escapes. ${VAR} makes a word dynamic.
func splitEnvString(s string) ([]Word, bool) {
	var out []Word
	var cur []byte
	have, dyn := false, false
	flush := func() {
		if have {
			if dyn {
				out = append(out, dynWord())
			} else {
				out = append(out, litWord(string(cur)))
			}
		}
		cur, have, dyn = cur[:0], false, false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			flush()
		case ch == '#' && !have:
			return out, true
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			cur, have = append(cur, s[i+1:i+1+j]...), true
			i += j + 1
		case ch == '"':
			i++
			have = true
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				} else if s[i] == '$' {
					dyn = true
				}
				cur = append(cur, s[i])
			}
			if i >= len(s) {
				return nil, false
			}
		case ch == '\\' && i+1 < len(s):
			i++
			if s[i] == 'c' {
				flush()
				return out, true
			}
			cur, have = append(cur, s[i]), true
		case ch == '$':
			dyn, have = true, true
		default:
			cur, have = append(cur, ch), true
		}
	}
	flush()
	return out, true
}

// xargsCmd handles xargs: the command gets the stdin items as extra
// (dynamic) arguments, or in place of the -I replacement string.
func (a *analyzer) xargsCmd(c ctx, idx int, spec *wrapSpec, args []Word) {
	var r optScan
	spec.opts.scanInto(args, &r)
	a.scanFlags(idx, args, &r)
	repl := ""
	for _, e := range r.events {
		switch e.name {
		case "I", "replace":
			if e.hasVal {
				repl = e.val.Value
			} else {
				repl = "{}"
			}
		case "i":
			repl = "{}"
			if e.hasVal {
				repl = e.val.Value
			}
		}
	}
	stdin := stdinSrc{kind: stdinNull}
	if r.has("a", "arg-file", "o", "open-tty") {
		stdin = c.stdin
	}
	starts := append([]int{r.start}, r.alts...)
	for _, start := range starts {
		if start > len(args) {
			continue
		}
		var words []Word
		if start == len(args) {
			words = []Word{litWord("echo")}
		} else {
			words = make([]Word, len(args)-start, len(args)-start+1)
			copy(words, args[start:])
		}
		if repl != "" {
			for i, w := range words {
				if strings.Contains(w.Value, repl) {
					words[i] = replaceDyn(w, repl)
				}
			}
		} else {
			words = append(words, dynWord())
		}
		a.wrapped(c, idx, words, "xargs", stdin)
	}
}

// replaceDyn replaces occurrences of s in w with a dynamic part.
func replaceDyn(w Word, s string) Word {
	parts := strings.Split(w.Value, s)
	var v, p strings.Builder
	for i, part := range parts {
		if i > 0 {
			v.WriteByte('*')
			p.WriteByte('*')
		}
		v.WriteString(part)
		p.WriteString(escapePattern(part))
	}
	return Word{Value: v.String(), Pattern: p.String(), Dynamic: true, Glob: true}
}

// sshCmd handles ssh: options, host, more options, then the remote command
// (run by the remote shell). -o ProxyCommand / LocalCommand run locally.
func (a *analyzer) sshCmd(c ctx, idx int, spec *wrapSpec, args []Word) {
	a.sshOptions(c, idx, args)
	var r optScan
	spec.opts.scanInto(args, &r)
	starts := append([]int{r.start}, r.alts...)
	a.scanFlags(idx, args, &r)
	for si, start := range starts {
		if start >= len(args) {
			continue
		}
		rest := args[start+1:] // after the host
		var r2 optScan
		spec.opts.scanInto(rest, &r2)
		cmdStart := r2.start
		if cmdStart >= len(rest) {
			if si == 0 {
				a.stdinCode(c, idx, "ssh", true)
			}
			continue
		}
		a.shellString(c, idx, joinWords(rest[cmdStart:]), "ssh", nil)
	}
}

// sshOptions analyses -o ProxyCommand=... and -o LocalCommand=... values
// (also used for scp and sftp).
func (a *analyzer) sshOptions(c ctx, idx int, args []Word) {
	for i, w := range args {
		var opt Word
		switch {
		case w.Value == "-o" && i+1 < len(args):
			opt = args[i+1]
		case strings.HasPrefix(w.Value, "-o") && len(w.Value) > 2 && !w.Dynamic:
			opt = litWord(w.Value[2:])
		default:
			continue
		}
		if opt.Dynamic {
			a.setCode(idx, CodeDynamic)
			continue
		}
		key, val := splitSSHOption(opt.Value)
		switch strings.ToLower(key) {
		case "proxycommand", "localcommand", "knownhostscommand":
			if val != "" && strings.ToLower(val) != "none" {
				a.shellString(c, idx, litWord(val), "ssh -o "+key, nil)
			}
		}
	}
}

func splitSSHOption(s string) (string, string) {
	s = strings.TrimSpace(s)
	i := strings.IndexAny(s, "= \t")
	if i < 0 {
		return s, ""
	}
	key := s[:i]
	val := strings.TrimLeft(s[i:], "= \t")
	return key, val
}

// parallelCmd handles GNU parallel: the command template (before :::) runs
// through a shell; with no command, the input lines are commands.
func (a *analyzer) parallelCmd(c ctx, idx int, args []Word) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i].Value, "-") && !args[i].Dynamic {
		if args[i].Value == "--" {
			i++
			break
		}
		i++
	}
	j := i
	for j < len(args) && !strings.HasPrefix(args[j].Value, ":::") {
		j++
	}
	a.wrapperFlags(idx, i)
	if j > i {
		a.shellString(c, idx, joinWords(args[i:j]), "parallel", nil)
		// The last skipped option may have taken a value: the command may
		// start one word later.
		if i > 0 && j > i+1 && !strings.HasPrefix(args[i-1].Value, "--") {
			a.shellString(c, idx, joinWords(args[i+1:j]), "parallel", nil)
		}
		return
	}
	if j < len(args) {
		// parallel ::: "cmd1" "cmd2": the arguments are commands.
		for _, w := range args[j+1:] {
			if strings.HasPrefix(w.Value, ":::") {
				break
			}
			a.shellString(c, idx, w, "parallel", nil)
		}
		return
	}
	a.stdinCode(c, idx, "parallel", false)
}

// findCmd handles find: -exec/-execdir/-ok/-okdir run a command ({} is a
// dynamic word), -delete is reported as "rm -rf" of the starting points,
// -fprint/-fls/-fprintf open files for writing.
func (a *analyzer) findCmd(c ctx, idx int, _ string, args []Word) {
	starts, i := findStarts(args)
	for ; i < len(args); i++ {
		w := args[i]
		if w.Dynamic {
			a.setCode(idx, CodeDynamic) // may be -exec or -delete
			continue
		}
		switch v := w.Value; v {
		case "-exec", "-execdir", "-ok", "-okdir":
			i = a.findExec(c, idx, args, i)
		case "-delete":
			words := make([]Word, 0, len(starts)+2)
			words = append(words, litWord("rm"), litWord("-rf"))
			words = append(words, starts...)
			a.wrapped(c, idx, words, "find -delete", c.stdin)
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 < len(args) {
				a.addCmdRedirect(idx, Redirect{Op: v, FD: -1, Target: args[i+1], Write: true})
				i++
			}
			if v == "-fprintf" {
				i++
			}
		}
	}
}

// findStarts returns find's starting points (. if none) and the index of
// the expression after them.
func findStarts(args []Word) ([]Word, int) {
	i := 0
	for i < len(args) && !args[i].Dynamic {
		v := args[i].Value
		if v == "-H" || v == "-L" || v == "-P" || (strings.HasPrefix(v, "-O") && isDigits(v[2:])) {
			i++
			continue
		}
		if v == "-D" {
			i += 2
			continue
		}
		break
	}
	s0 := i
	for ; i < len(args); i++ {
		w := args[i]
		if !w.Dynamic && (strings.HasPrefix(w.Value, "-") || w.Value == "(" || w.Value == "!" || w.Value == ")" || w.Value == ",") {
			break
		}
	}
	starts := args[s0:i:i]
	if len(starts) == 0 {
		starts = []Word{litWord(".")}
	}
	return starts, i
}

// findExec analyses the command of the -exec-like action at args[i]; it
// returns the index of the terminating ; or +.
func (a *analyzer) findExec(c ctx, idx int, args []Word, i int) int {
	j := i + 1
	var words []Word
	for ; j < len(args); j++ {
		x := args[j]
		if !x.Dynamic && (x.Value == ";" || (x.Value == "+" && j > i+1 && args[j-1].Value == "{}")) {
			break
		}
		if strings.Contains(x.Value, "{}") {
			x = replaceDyn(x, "{}")
		}
		words = append(words, x)
	}
	a.wrapped(c, idx, words, "find "+args[i].Value, c.stdin)
	return j
}

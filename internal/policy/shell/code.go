package shell

import (
	"strings"
)

// interpSpec describes an interpreter's options.
type interpSpec struct {
	opts     optSpec  // value-taking options (shortVal, shortOpt, longVal)
	digits   string   // short options taking optional attached digits (perl -l, -0)
	code     string   // short options whose value is program text
	codeLong []string // long options whose value is program text
	stop     string   // short options that end option processing without code (python -m)
	fileOpt  string   // short options naming the program file
	noStdin  bool     // never reads a program from stdin
}

var pythonSpec = &interpSpec{code: "c", stop: "m", opts: optSpec{shortVal: "WX", longVal: []string{"check-hash-based-pycs"}}}

var interps = map[string]*interpSpec{
	"python":    pythonSpec,
	"pypy":      pythonSpec,
	"ipython":   pythonSpec,
	"jython":    pythonSpec,
	"node":      {code: "ep", codeLong: []string{wEval, "print"}, opts: optSpec{shortVal: "rC", longVal: []string{"require", "import", "loader", "experimental-loader", "conditions", "input-type", "title", wEnvFile, "redirect-warnings", "openssl-config", "icu-data-dir", "diagnostic-dir", "report-dir", "disable-warning"}}},
	"nodejs":    {code: "ep", codeLong: []string{wEval, "print"}, opts: optSpec{shortVal: "rC", longVal: []string{"require", "import", "loader", "experimental-loader", "conditions", "input-type", "title", wEnvFile}}},
	"bun":       {code: "ep", codeLong: []string{wEval, "print"}, noStdin: true},
	"perl":      {code: "eE", digits: "0lCD", opts: optSpec{shortVal: "MmI", shortOpt: "idFxV"}},
	"ruby":      {code: "e", digits: "0WT", opts: optSpec{shortVal: "rICE", shortOpt: "xF", longVal: []string{"encoding", "external-encoding", "internal-encoding"}}},
	"php":       {code: "rBRE", codeLong: []string{wRun, "process-begin", "process-code", "process-end"}, fileOpt: "fF", opts: optSpec{shortVal: "cdztS", longVal: []string{"php-ini", "define", "zend-extension", "docroot", wFile, "process-file"}}},
	"lua":       {code: "e", opts: optSpec{shortVal: "l"}},
	"luajit":    {code: "e", stop: "b", opts: optSpec{shortVal: "lj", shortOpt: "O"}},
	"rscript":   {code: "e", noStdin: true},
	"r":         {code: "e", fileOpt: "f", opts: optSpec{longVal: []string{wFile, "args", "encoding"}}},
	"osascript": {code: "e", opts: optSpec{shortVal: "ls"}},
	"expect":    {code: "c", fileOpt: "f", opts: optSpec{shortVal: "D"}},
	"tclsh":     {},
	"wish":      {},
	"irb":       {opts: optSpec{shortVal: "rI"}},
	"julia":     {code: "eE", codeLong: []string{wEval, "print"}, opts: optSpec{shortVal: "CJLOpt", longVal: []string{"project", "sysimage", "threads", "procs", "load", "machine-file", "optimize"}}},
	"elixir":    {code: "e", codeLong: []string{wEval, "rpc-eval"}, opts: optSpec{shortVal: "rS", longVal: []string{"require", "erl", "name", "sname", "cookie", "pa", "pz"}}},
	"racket":    {code: "e", codeLong: []string{wEval}, opts: optSpec{shortVal: "fltrpk"}},
	"guile":     {code: "ce", opts: optSpec{shortVal: "sLlx"}},
	"sbcl":      {codeLong: []string{wEval}, opts: optSpec{longVal: []string{"load", "script", "core", "dynamic-space-size", "control-stack-size"}}},
	"ghc":       {code: "e", noStdin: true},
	"jshell":    {},
}

// codeHandler analyses a program's arguments for code it runs.
type codeHandler func(a *analyzer, c ctx, idx int, name string, args []Word)

// programCodes maps a program family to its handler. It is filled at init
// (initProgramCodes): the handlers reach programCode again through nested
// commands.
var programCodes map[string]codeHandler

func initProgramCodes() {
	programCodes = map[string]codeHandler{}
	add := func(h codeHandler, names ...string) {
		for _, n := range names {
			programCodes[n] = h
		}
	}
	add(func(a *analyzer, _ ctx, idx int, _ string, args []Word) { a.awkCmd(idx, args) },
		"awk", "gawk", "mawk", "nawk", "original-awk", "goawk")
	add(func(a *analyzer, _ ctx, idx int, _ string, args []Word) { a.sedCmd(idx, args) }, "sed", "gsed")
	add((*analyzer).pwshCmd, "pwsh", wPowershell, "pwsh-preview")
	add(func(a *analyzer, c ctx, idx int, _ string, args []Word) { a.denoCmd(c, idx, args) }, "deno")
	add(func(a *analyzer, c ctx, idx int, _ string, args []Word) { a.tarCmd(c, idx, args) }, "tar", "gtar", "bsdtar")
	add(optStringsHandler("e", []string{"rsh", "rsync-path"}, "rsync"), "rsync")
	add((*analyzer).zipCode, "zip")
	add(optStringsHandler("PH", []string{"pager", "html"}, "man"), "man")
	add(func(a *analyzer, c ctx, idx int, _ string, args []Word) { a.gitCmd(c, idx, args) }, wGit)
	add((*analyzer).vimCode, "vim", "vi", "nvim", "view", "ex", "vimdiff", "gvim", "rvim", "nvi", "vim.tiny", "vim.basic")
	add((*analyzer).gdbCode, "gdb")
	add((*analyzer).makeCode, "make", "gmake")
	add(func(a *analyzer, c ctx, idx int, _ string, args []Word) { a.sshOptions(c, idx, args) }, "scp", "sftp")
	add((*analyzer).netcatCmd, "nc", "ncat", "netcat", "nc.traditional", "nc.openbsd")
	add((*analyzer).socatCode, "socat")
	add(func(a *analyzer, c ctx, idx int, _ string, args []Word) { a.tmuxCmd(c, idx, args) }, "tmux")
	add((*analyzer).hyperfineCode, "hyperfine")
	add((*analyzer).watchexecCode, "watchexec")
	add(optStringsHandler("x", []string{wExec}, "nodemon"), "nodemon")
	add(optStringsHandler("", []string{wRun, wCommand}, "nix-shell"), "nix-shell")
	add(func(a *analyzer, c ctx, idx int, _ string, args []Word) { a.screenCmd(c, idx, args) }, "screen")
	add(inlineIf(func(v string) bool {
		return strings.Contains(v, `\!`) || strings.Contains(v, `\o |`) || strings.Contains(v, `\g |`)
	}), "psql")
	add(inlineIf(func(v string) bool {
		return strings.Contains(v, `\!`) || strings.Contains(strings.ToLower(v), "system ")
	}), "mysql", "mariadb")
	add(inlineIf(func(v string) bool {
		v = strings.TrimSpace(v)
		return strings.Contains(v, ".shell") || strings.Contains(v, ".system") || strings.HasPrefix(v, ".sh")
	}), "sqlite3", "sqlite")
}

// optStringsHandler is a codeHandler calling optStrings.
func optStringsHandler(short string, long []string, via string) codeHandler {
	return func(a *analyzer, c ctx, idx int, _ string, args []Word) {
		a.optStrings(c, idx, args, short, long, via)
	}
}

// inlineIf is a codeHandler setting CodeInline when an argument's value
// matches.
func inlineIf(match func(string) bool) codeHandler {
	return func(a *analyzer, _ ctx, idx int, _ string, args []Word) {
		for _, w := range args {
			if match(w.Value) {
				a.setCode(idx, CodeInline)
			}
		}
	}
}

// programCode sets Code for interpreters and for programs with options that
// run commands; info holds the tables' entries for name's family.
func (a *analyzer) programCode(c ctx, idx int, name string, info *progInfo, args []Word) {
	if info.interp != nil {
		a.interpCmd(c, idx, name, info.interp, args)
		return
	}
	if info.code != nil {
		info.code(a, c, idx, name, args)
	}
}

// zipCode analyses zip -TT / --unzip-command.
func (a *analyzer) zipCode(c ctx, idx int, _ string, args []Word) {
	for i, w := range args {
		if (w.Value == "-TT" || w.Value == "--unzip-command") && i+1 < len(args) {
			a.shellString(c, idx, args[i+1], "zip -TT", nil)
		} else if v, ok := strings.CutPrefix(w.Value, "--unzip-command="); ok {
			a.shellString(c, idx, litWord(v), "zip -TT", nil)
		}
	}
}

// vimCode sets Code for vim's options that run Ex commands.
func (a *analyzer) vimCode(_ ctx, idx int, _ string, args []Word) {
	for _, w := range args {
		v := w.Value
		if v == "-c" || v == "--cmd" || v == "-S" || v == "-s" || v == "-W" ||
			(strings.HasPrefix(v, "+") && !isDigits(v[1:]) && !strings.HasPrefix(v, "+/") && v != "+") {
			a.setCode(idx, CodeInline)
		}
	}
}

// gdbCode sets Code for gdb's options that run commands.
func (a *analyzer) gdbCode(_ ctx, idx int, _ string, args []Word) {
	for _, w := range args {
		switch strings.TrimLeft(strings.SplitN(w.Value, "=", 2)[0], "-") {
		case "ex", "eval-command", "iex", "init-eval-command", "x", wCommand, "ix", "init-command":
			a.setCode(idx, CodeInline)
		}
	}
}

// makeCode sets Code for make --eval.
func (a *analyzer) makeCode(_ ctx, idx int, _ string, args []Word) {
	for _, w := range args {
		if w.Value == "-E" || w.Value == "--eval" || strings.HasPrefix(w.Value, "--eval=") {
			a.setCode(idx, CodeInline)
		}
	}
}

// socatCode analyses socat's EXEC:cmd and SYSTEM:cmd addresses, which run a
// program whose stdin and stdout are the other address (often the network).
func (a *analyzer) socatCode(c ctx, idx int, _ string, args []Word) {
	for _, w := range args {
		v := strings.ToLower(w.Value)
		for _, pre := range []string{"exec:", "system:"} {
			if strings.HasPrefix(v, pre) {
				a.socatAddr(c, idx, w, pre)
			}
		}
	}
}

// socatAddr analyses one EXEC: or SYSTEM: address (pre is its lower-case
// prefix).
func (a *analyzer) socatAddr(c ctx, idx int, w Word, pre string) {
	cmd := w.Value[len(pre):]
	if i := strings.IndexByte(cmd, ','); i >= 0 {
		cmd = cmd[:i] // address options follow a comma
	}
	switch {
	case w.Dynamic:
		a.setCode(idx, CodeDynamic)
	case pre == "exec:":
		a.wrapped(c, idx, splitSpaces(litWord(cmd)), "socat exec", stdinSrc{kind: stdinPipe})
	default:
		pc := c
		pc.stdin = stdinSrc{kind: stdinPipe}
		a.shellString(pc, idx, litWord(cmd), "socat system", nil)
	}
}

// hyperfineCode analyses hyperfine: every operand is a command run through a
// shell, as are the values of --prepare, --setup, --cleanup, --conclude.
func (a *analyzer) hyperfineCode(c ctx, idx int, _ string, args []Word) {
	a.optStrings(c, idx, args, "ps", []string{"prepare", "setup", "cleanup", "conclude", wShell}, "hyperfine")
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := w.Value
		if !w.Dynamic && strings.HasPrefix(v, "-") {
			if hyperfineTakesValue(v) {
				i++
			}
			continue
		}
		a.shellString(c, idx, w, "hyperfine", nil)
	}
}

// hyperfineTakesValue reports whether hyperfine's option v is followed by a
// separate value.
func hyperfineTakesValue(v string) bool {
	return len(v) == 2 && strings.IndexByte("wmMrpscSnuLPTo", v[1]) >= 0 || (strings.HasPrefix(v, "--") && !strings.Contains(v, "=") &&
		v != "--ignore-failure" && v != "--show-output" && v != "--help" && v != "--version" && v != "--style" && v != "--export-json")
}

// watchexecCode analyses watchexec [options] [--] COMMAND...: run through a
// shell.
func (a *analyzer) watchexecCode(c ctx, idx int, _ string, args []Word) {
	for i, w := range args {
		if !w.Dynamic && w.Value == "--" {
			if i+1 < len(args) {
				a.shellString(c, idx, joinWords(args[i+1:]), "watchexec", nil)
			}
			return
		}
	}
	if len(args) > 0 && !strings.HasPrefix(args[len(args)-1].Value, "-") {
		a.shellString(c, idx, args[len(args)-1], "watchexec", nil)
	}
}

// optStrings analyses the values of the given options as shell commands.
func (a *analyzer) optStrings(c ctx, idx int, args []Word, short string, long []string, via string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := w.Value
		if w.Dynamic || len(v) < 2 || v[0] != '-' {
			continue
		}
		if v == "--" {
			return
		}
		if v[1] == '-' {
			n, val, hasEq := strings.Cut(v[2:], "=")
			for _, l := range long {
				if n == l {
					if hasEq {
						a.shellString(c, idx, litWord(val), via+" --"+l, nil)
					} else if i+1 < len(args) {
						a.shellString(c, idx, args[i+1], via+" --"+l, nil)
						i++
					}
				}
			}
			continue
		}
		for j := 1; j < len(v); j++ {
			if strings.IndexByte(short, v[j]) >= 0 {
				if j+1 < len(v) {
					a.shellString(c, idx, litWord(v[j+1:]), via+" -"+v[j:j+1], nil)
				} else if i+1 < len(args) {
					a.shellString(c, idx, args[i+1], via+" -"+v[j:j+1], nil)
					i++
				}
				break
			}
		}
	}
}

// interpCmd sets Code for an interpreter: inline program text, a program
// read from stdin, or options that are not known.
func (a *analyzer) interpCmd(c ctx, idx int, name string, spec *interpSpec, args []Word) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w.procSubst {
			a.setCode(idx, CodePiped)
			return
		}
		if w.Dynamic {
			a.setCode(idx, CodeDynamic)
			return
		}
		v := w.Value
		if v == "-" {
			a.stdinCodeX(c, idx, name, false, true)
			return
		}
		if v == "--" {
			if i+1 < len(args) {
				a.fileCode(c, idx, name, args[i+1], false)
			} else if !spec.noStdin {
				a.stdinCode(c, idx, name, false)
			}
			return
		}
		if len(v) < 2 || v[0] != '-' {
			a.fileCode(c, idx, name, w, false)
			return
		}
		var done bool
		if v[1] == '-' {
			i, done = a.interpLong(idx, spec, v, i)
		} else {
			i, done = a.interpCluster(c, idx, name, spec, args, i)
		}
		if done {
			return
		}
	}
	if !spec.noStdin {
		a.stdinCode(c, idx, name, false)
	}
}

// interpLong handles an interpreter's long option v at args[i]. It returns
// the index of the last word the option uses, and done when the analysis
// is over.
func (a *analyzer) interpLong(idx int, spec *interpSpec, v string, i int) (int, bool) {
	n, _, hasEq := strings.Cut(v[2:], "=")
	for _, l := range spec.codeLong {
		if n == l {
			a.setCode(idx, CodeInline)
			return i, true
		}
	}
	if _, k := spec.opts.longKind(n); k == optVal && !hasEq {
		i++
	}
	return i, false
}

// interpCluster handles an interpreter's cluster of short options at
// args[i]. It returns the index of the last word the options use, and done
// when the analysis is over.
func (a *analyzer) interpCluster(c ctx, idx int, name string, spec *interpSpec, args []Word, i int) (int, bool) {
	v := args[i].Value
	for j := 1; j < len(v); j++ {
		ch := v[j]
		switch {
		case strings.IndexByte(spec.code, ch) >= 0:
			a.setCode(idx, CodeInline)
			return i, true
		case strings.IndexByte(spec.stop, ch) >= 0:
			return i, true
		case strings.IndexByte(spec.fileOpt, ch) >= 0:
			if j+1 < len(v) {
				a.fileCode(c, idx, name, litWord(v[j+1:]), false)
			} else if i+1 < len(args) {
				a.fileCode(c, idx, name, args[i+1], false)
			}
			return i, true
		case strings.IndexByte(spec.opts.shortVal, ch) >= 0:
			if j+1 == len(v) {
				i++
			}
			return i, false
		case strings.IndexByte(spec.opts.shortOpt, ch) >= 0:
			return i, false
		case strings.IndexByte(spec.digits, ch) >= 0:
			j = skipOptDigits(v, j)
		}
	}
	return i, false
}

// skipOptDigits returns the index of the last of the optional digits
// attached to the option at v[j] (octal for -0, or x and hex).
func skipOptDigits(v string, j int) int {
	if v[j] == '0' && j+1 < len(v) && (v[j+1] == 'x' || v[j+1] == 'X') {
		j++
		for j+1 < len(v) && isHex(v[j+1]) {
			j++
		}
		return j
	}
	for j+1 < len(v) && v[j+1] >= '0' && v[j+1] <= '9' {
		j++
	}
	return j
}

// pwshCmd handles PowerShell: -Command / -EncodedCommand are inline code;
// Windows PowerShell takes a bare argument as a command, pwsh as a file.
func (a *analyzer) pwshCmd(c ctx, idx int, name string, args []Word) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w.Dynamic {
			a.setCode(idx, CodeDynamic)
			return
		}
		v := w.Value
		if !pwshIsOpt(name, v) || v == "-" {
			if name == wPowershell {
				a.setCode(idx, CodeInline)
			} else {
				a.fileCode(c, idx, name, w, false)
			}
			return
		}
		o := strings.ToLower(strings.TrimLeft(v, "-/"))
		if o, _, _ = strings.Cut(o, ":"); o == "" {
			continue
		}
		switch pwshOptKind(o) {
		case pwshCommand:
			if i+1 < len(args) && args[i+1].Value == "-" {
				a.stdinCode(c, idx, name, false)
			} else {
				a.setCode(idx, CodeInline)
			}
			return
		case pwshEncoded:
			a.setCode(idx, CodeInline)
			return
		case pwshFile:
			if i+1 < len(args) {
				a.fileCode(c, idx, name, args[i+1], false)
			}
			return
		case pwshValue:
			i++
		}
	}
	a.stdinCode(c, idx, name, false)
}

// pwshIsOpt reports whether v is an option: -x, or /x for Windows
// PowerShell.
func pwshIsOpt(name, v string) bool {
	return strings.HasPrefix(v, "-") || (name == wPowershell && strings.HasPrefix(v, "/") && len(v) > 1 && !strings.Contains(v[1:], "/"))
}

// pwshOpt classifies PowerShell options.
type pwshOpt int

const (
	pwshOther   pwshOpt = iota
	pwshCommand         // -Command, -CommandWithArgs
	pwshEncoded         // -EncodedCommand
	pwshFile            // -File
	pwshValue           // an option taking a value
)

// pwshOptKind classifies option o (lower case, without dashes or :value);
// PowerShell accepts unambiguous prefixes.
func pwshOptKind(o string) pwshOpt {
	switch {
	case strings.HasPrefix(wCommand, o) || o == "cwa" || strings.HasPrefix("commandwithargs", o):
		return pwshCommand
	case o == "e" || o == "ec" || (len(o) >= 2 && strings.HasPrefix("encodedcommand", o)):
		return pwshEncoded
	case strings.HasPrefix(wFile, o):
		return pwshFile
	case pwshValueOpt(o):
		return pwshValue
	}
	return pwshOther
}

// pwshValueOpt reports whether o is an option taking a value.
func pwshValueOpt(o string) bool {
	switch o {
	case "ep", "of", "if", "wd":
		return true
	}
	for _, full := range []string{"executionpolicy", "windowstyle", wVersion, "inputformat", "outputformat",
		"configurationname", "workingdirectory", "settingsfile", "custompipename"} {
		if strings.HasPrefix(full, o) {
			return true
		}
	}
	return false
}

func (a *analyzer) denoCmd(c ctx, idx int, args []Word) {
	sub := -1
	for i, w := range args {
		if w.Dynamic {
			a.setCode(idx, CodeDynamic)
			return
		}
		if strings.HasPrefix(w.Value, "--eval") {
			a.setCode(idx, CodeInline)
			return
		}
		if !strings.HasPrefix(w.Value, "-") || w.Value == "-" {
			if sub < 0 {
				sub = i
				switch w.Value {
				case wEval:
					a.setCode(idx, CodeInline)
					return
				case wRun, "serve", "test", "bench", "compile", "install", "x":
					continue
				}
			}
			a.fileCode(c, idx, "deno", w, false)
			return
		}
	}
}

// tarCmd analyses tar's options that run programs.
func (a *analyzer) tarCmd(c ctx, idx int, args []Word) {
	long := []string{"to-command", "use-compress-program", "rsh-command", "info-script", "new-volume-script"}
	a.optStrings(c, idx, args, "IF", long, "tar")
	for _, w := range args {
		v := w.Value
		if strings.HasPrefix(v, "--checkpoint-action=") {
			if cmd, ok := strings.CutPrefix(v[len("--checkpoint-action="):], "exec="); ok {
				a.shellString(c, idx, litWord(cmd), "tar --checkpoint-action", nil)
			}
		}
	}
}

// gitCmd analyses git -c settings whose values are commands, and
// git config setting them.
func (a *analyzer) gitCmd(c ctx, idx int, args []Word) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := w.Value
		if w.Dynamic {
			return
		}
		if !strings.HasPrefix(v, "-") {
			// The subcommand: global options end.
			if v == "config" {
				a.gitConfig(c, idx, args[i+1:])
			}
			return
		}
		var kv Word
		switch {
		case v == "-c" && i+1 < len(args):
			kv = args[i+1]
			i++
		case strings.HasPrefix(v, "--config-env="):
			a.setCode(idx, CodeDynamic)
			continue
		case v == "-C" || v == "--git-dir" || v == "--work-tree" || v == "--namespace" || v == "--exec-path" || v == "--super-prefix" || v == "--list-cmds":
			i++
			continue
		default:
			continue
		}
		if kv.Dynamic {
			a.setCode(idx, CodeDynamic)
			continue
		}
		key, val, _ := strings.Cut(kv.Value, "=")
		key = strings.ToLower(key)
		switch {
		case gitCommandKey(key):
			src := strings.TrimPrefix(strings.TrimSpace(val), "!")
			if strings.TrimSpace(src) != "" {
				a.shellString(c, idx, litWord(src), "git -c "+key, nil)
			}
		case key == "core.hookspath" || key == "core.fsmonitor" || strings.HasPrefix(key, "protocol.") ||
			key == "include.path" || strings.HasPrefix(key, "includeif."):
			a.setCode(idx, CodeInline)
		}
	}
}

func gitCommandKey(k string) bool {
	switch k {
	case "core.sshcommand", "core.pager", "core.editor", "core.askpass", "core.gitproxy", "sequence.editor",
		"gpg.program", "gpg.ssh.program", "gpg.x509.program", "gpg.openpgp.program", "credential.helper",
		"diff.external", "uploadpack.packobjectshook", "web.browser", "merge.tool", "diff.tool":
		return true
	}
	if strings.HasPrefix(k, "alias.") || strings.HasPrefix(k, "pager.") {
		return true
	}
	for _, suf := range []string{".command", ".textconv", ".clean", ".smudge", ".process", ".driver", ".helper", ".receivepack", ".uploadpack", ".cmd", ".proxy"} {
		if strings.HasSuffix(k, suf) {
			return true
		}
	}
	return false
}

var awkSpec = optSpec{
	shortVal: "FvfeEliW", shortOpt: "opdDL", permute: false,
	longVal: []string{"field-separator", "assign", wFile, wSource, wExec, "include", "load"},
	longOpt: []string{"dump-variables", wDebug, "profile", "pretty-print", "lint"},
}

// awkCmd sets Code when an awk program can run commands: system(), pipes to
// or from commands, gawk's @ calls, -l extensions.
func (a *analyzer) awkCmd(idx int, args []Word) {
	var r optScan
	awkSpec.scanInto(args, &r)
	fromFile := false
	var progs []Word
	for _, e := range r.events {
		switch e.name {
		case "f", wFile, "E", wExec, "i", "include":
			fromFile = true
		case "e", wSource:
			if e.hasVal {
				progs = append(progs, e.val)
			}
		case "l", "load":
			a.setCode(idx, CodeInline)
		}
	}
	if !fromFile && len(progs) == 0 && r.start < len(args) {
		progs = append(progs, args[r.start])
	}
	if len(r.alts) > 0 && !fromFile {
		a.setCode(idx, CodeDynamic)
	}
	for _, p := range progs {
		if p.Dynamic {
			a.setCode(idx, CodeDynamic)
		} else if awkRunsCode(p.Value) {
			a.setCode(idx, CodeInline)
		}
	}
}

// awkRunsCode reports whether an awk program may run a command. Strings,
// comments and regular expressions are skipped; where a slash could be
// either a regex or a division, it is taken as a division so that what
// follows is still scanned.
func awkRunsCode(p string) bool {
	prev := byte('\n')
	for i := 0; i < len(p); i++ {
		ch := p[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r':
		case ch == '\\' && i+1 < len(p) && p[i+1] == '\n':
			i++
		case ch == '#':
			i = awkSkipComment(p, i)
		case ch == '"':
			i = awkSkipQuoted(p, i, false)
			prev = '"'
		case ch == '/' && strings.IndexByte("(,{};\n~!&|?:=}", prev) >= 0:
			i = awkSkipQuoted(p, i, true)
			prev = ')'
		case ch == '|':
			if i+1 < len(p) && p[i+1] == '|' {
				i++
				prev = '|'
				continue
			}
			return true
		case ch == '@':
			return true
		case awkNameStart(ch):
			j := awkNameEnd(p, i)
			if p[i:j] == "system" {
				return true
			}
			i = j - 1
			prev = 'a'
		default:
			prev = ch
		}
	}
	return false
}

// awkSkipComment returns the index of the last byte of the comment at p[i].
func awkSkipComment(p string, i int) int {
	for i+1 < len(p) && p[i+1] != '\n' {
		i++
	}
	return i
}

// awkSkipQuoted returns the index of the closing quote of the string (or,
// if regex, the regular expression, which also ends at a newline) opened at
// p[i], or len(p) if it is not closed.
func awkSkipQuoted(p string, i int, regex bool) int {
	q := p[i]
	for i++; i < len(p) && p[i] != q && (!regex || p[i] != '\n'); i++ {
		if p[i] == '\\' {
			i++
		}
	}
	return i
}

// awkNameStart reports whether ch starts a name.
func awkNameStart(ch byte) bool {
	return ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z'
}

// awkNameEnd returns the index after the name at p[i].
func awkNameEnd(p string, i int) int {
	for i < len(p) && (awkNameStart(p[i]) || p[i] >= '0' && p[i] <= '9') {
		i++
	}
	return i
}

var sedSpec = optSpec{
	shortVal: "efl", shortOpt: "i", shortNone: "nrEsuz", permute: true,
	longVal:  []string{"expression", wFile, "line-length"},
	longOpt:  []string{"in-place"},
	longNone: []string{wQuiet, "silent", wDebug, "posix", "sandbox", "follow-symlinks", "regexp-extended", "separate", "unbuffered", "null-data", "binary", wHelp, wVersion},
}

// sedCmd sets Code when a sed script uses the e command or the s///e flag.
func (a *analyzer) sedCmd(idx int, args []Word) {
	var r optScan
	sedSpec.scanInto(args, &r)
	if r.has("sandbox") {
		return
	}
	var scripts []Word
	fromFile := false
	for _, e := range r.events {
		switch e.name {
		case "e", "expression":
			if e.hasVal {
				scripts = append(scripts, e.val)
			}
		case "f", wFile:
			fromFile = true
		}
	}
	if len(scripts) == 0 && !fromFile && len(r.operands) > 0 {
		scripts = append(scripts, args[r.operands[0]])
	}
	for _, s := range scripts {
		if s.Dynamic {
			a.setCode(idx, CodeDynamic)
		} else if sedRunsCode(s.Value) {
			a.setCode(idx, CodeInline)
		}
	}
	for _, w := range args {
		if w.Dynamic && !r.dashdash {
			// A dynamic word may be -e SCRIPT.
			a.setCode(idx, CodeDynamic)
		}
	}
}

// sedRunsCode reports whether a sed script may run a command (GNU sed's e
// command and s///e flag). What it cannot parse counts as code.
func sedRunsCode(s string) bool {
	p := &sedScript{s: s}
	for p.i < len(s) {
		switch s[p.i] {
		case ' ', '\t', '\n', ';', '\r':
			p.i++
			continue
		case '#':
			p.skipTo("\n")
			continue
		}
		if !p.addresses() {
			return true
		}
		if p.i >= len(s) {
			return false
		}
		cmd := s[p.i]
		p.i++
		if p.command(cmd) {
			return true
		}
	}
	return false
}

// sedScript is a sed script read by sedRunsCode from s[i].
type sedScript struct {
	s string
	i int
}

// skipTo advances to the next byte in stop (or the end).
func (p *sedScript) skipTo(stop string) {
	for p.i < len(p.s) && strings.IndexByte(stop, p.s[p.i]) < 0 {
		p.i++
	}
}

// skipWhile advances past the bytes for which keep holds.
func (p *sedScript) skipWhile(keep func(byte) bool) {
	for p.i < len(p.s) && keep(p.s[p.i]) {
		p.i++
	}
}

// delimited reads a regex or replacement ending at an unescaped d.
func (p *sedScript) delimited(d byte) bool {
	s := p.s
	for p.i < len(s) {
		switch s[p.i] {
		case '\\':
			p.i += 2
			continue
		case d:
			p.i++
			return true
		case '\n':
			if d != '\n' {
				return false
			}
		}
		p.i++
	}
	return false
}

// fields reads n consecutive fields ending at an unescaped d: the regex and
// replacement of an s command, the source and destination characters of y.
func (p *sedScript) fields(d byte, n int) bool {
	for range n {
		if !p.delimited(d) {
			return false
		}
	}
	return true
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isRegexFlag(b byte) bool { return b == 'I' || b == 'M' }

// address reads one address (a line number, $, /regex/ or \cregexc, or
// GNU's +N and ~N); false if it cannot.
func (p *sedScript) address() bool {
	s := p.s
	if p.i >= len(s) {
		return true
	}
	switch ch := s[p.i]; {
	case isDigit(ch):
		p.skipWhile(func(b byte) bool { return isDigit(b) || b == '~' })
	case ch == '$':
		p.i++
	case ch == '/':
		p.i++
		if !p.delimited('/') {
			return false
		}
		p.skipWhile(isRegexFlag)
	case ch == '\\':
		if p.i+1 >= len(s) {
			return false
		}
		d := s[p.i+1]
		p.i += 2
		if !p.delimited(d) {
			return false
		}
		p.skipWhile(isRegexFlag)
	case ch == '+' || ch == '~':
		p.i++
		p.skipWhile(isDigit)
	}
	return true
}

// addresses reads a command's addresses and the blanks and '!' before the
// command; false if it cannot.
func (p *sedScript) addresses() bool {
	if !p.address() {
		return false
	}
	p.skipWhile(func(b byte) bool { return b == ' ' || b == '\t' })
	if p.i < len(p.s) && p.s[p.i] == ',' {
		p.i++
		if !p.address() {
			return false
		}
	}
	p.skipWhile(func(b byte) bool { return b == ' ' || b == '\t' || b == '!' })
	return true
}

// command reads the rest of command cmd and reports whether it may run a
// command or cannot be parsed.
func (p *sedScript) command(cmd byte) bool {
	s := p.s
	switch cmd {
	case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
	case 'e':
		return true
	case 's':
		if p.i >= len(s) {
			return true
		}
		d := s[p.i]
		if d == '\n' || d == '\\' {
			return true
		}
		p.i++
		if !p.fields(d, 2) { // the regex and the replacement
			return true
		}
		return p.sFlags()
	case 'y':
		if p.i >= len(s) {
			return true
		}
		d := s[p.i]
		p.i++
		if !p.fields(d, 2) { // the source and the destination characters
			return true
		}
	case 'a', 'i', 'c':
		// Text to the end of the line; a backslash continues it.
		for p.i < len(s) && s[p.i] != '\n' {
			if s[p.i] == '\\' {
				p.i++
			}
			p.i++
		}
	case 'r', 'R', 'w', 'W':
		p.skipTo("\n")
	case ':':
		p.skipTo("\n;")
	case 'b', 't', 'T':
		p.skipTo("\n;}")
	case 'q', 'Q', 'l', 'L':
		p.skipWhile(func(b byte) bool { return b == ' ' || isDigit(b) })
	case 'v':
		p.skipTo("\n;}")
	default:
		return true
	}
	return false
}

// sFlags reads an s command's flags and reports whether they may run a
// command (e) or cannot be parsed.
func (p *sedScript) sFlags() bool {
	s := p.s
	for p.i < len(s) {
		f := s[p.i]
		if f == ';' || f == '\n' || f == '}' || f == ' ' || f == '\t' || f == '#' {
			break
		}
		switch {
		case f == 'e':
			return true
		case f == 'w':
			p.skipTo("\n")
		case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || isDigit(f):
			p.i++
		default:
			return true
		}
	}
	return false
}

// gitConfig analyses "git config [--global] KEY VALUE" when KEY holds a
// command (alias.x=!cmd, core.sshCommand, ...).
func (a *analyzer) gitConfig(c ctx, idx int, args []Word) {
	var pos []Word
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Dynamic && strings.HasPrefix(w.Value, "-") {
			switch w.Value {
			case "-f", "--file", "--blob", "--type", "--default", "--comment":
				i++
			}
			continue
		}
		pos = append(pos, w)
	}
	if len(pos) < 2 {
		return
	}
	if pos[0].Dynamic {
		a.setCode(idx, CodeDynamic)
		return
	}
	key := strings.ToLower(pos[0].Value)
	switch {
	case gitCommandKey(key):
		if pos[1].Dynamic {
			a.setCode(idx, CodeDynamic)
			return
		}
		if src := strings.TrimPrefix(strings.TrimSpace(pos[1].Value), "!"); strings.TrimSpace(src) != "" {
			a.shellString(c, idx, litWord(src), "git config "+key, nil)
		}
	case key == "core.hookspath" || key == "core.fsmonitor" || strings.HasPrefix(key, "protocol.") ||
		key == "include.path" || strings.HasPrefix(key, "includeif."):
		a.setCode(idx, CodeInline)
	}
}

// netcatCmd handles nc -e PROG (runs PROG with the socket as stdin and
// stdout) and ncat -c CMD / --sh-exec CMD (runs CMD through sh).
func (a *analyzer) netcatCmd(c ctx, idx int, name string, args []Word) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := w.Value
		if w.Dynamic || len(v) < 2 || v[0] != '-' {
			continue
		}
		var val Word
		has := false
		switch {
		case v == "-e" || v == "--exec" || v == "-c" || v == "--sh-exec" || v == "--lua-exec":
			if i+1 < len(args) {
				val, has = args[i+1], true
				i++
			}
		case strings.HasPrefix(v, "--exec=") || strings.HasPrefix(v, "--sh-exec="):
			_, rest, _ := strings.Cut(v, "=")
			val, has = litWord(rest), true
		case v[1] != '-' && strings.IndexByte(v[1:], 'e') == len(v)-2:
			// a cluster ending in e: -lvpe PROG
			if i+1 < len(args) {
				val, has = args[i+1], true
				i++
			}
		}
		if !has {
			continue
		}
		switch {
		case v == "--lua-exec":
			a.setCode(idx, CodeInline)
		case val.Dynamic:
			a.setCode(idx, CodeDynamic)
		case v == "-c" || strings.HasPrefix(v, "--sh-exec"):
			a.shellString(c, idx, val, name+" -c", nil)
		default:
			// The program's stdin is the network: a shell there runs what
			// the peer sends.
			a.wrapped(c, idx, splitSpaces(val), name+" -e", stdinSrc{kind: stdinPipe})
		}
	}
}

// splitSpaces splits a static word at spaces (nc -e "/bin/sh -i").
func splitSpaces(w Word) []Word {
	var out []Word
	for _, f := range strings.Fields(w.Value) {
		out = append(out, litWord(f))
	}
	if len(out) == 0 {
		out = append(out, w)
	}
	return out
}

// tmuxCmd handles tmux subcommands that run a shell command
// (new-session, new-window, split-window, respawn-*, run-shell, if-shell,
// display-popup) and send-keys, which types into a shell.
func (a *analyzer) tmuxCmd(c ctx, idx int, args []Word) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w.Dynamic {
			a.setCode(idx, CodeDynamic)
			return
		}
		v := w.Value
		if strings.HasPrefix(v, "-") {
			if v == "-L" || v == "-S" || v == "-f" || v == "-T" || v == "-c" {
				if v == "-c" && i+1 < len(args) {
					a.shellString(c, idx, args[i+1], "tmux -c", nil)
				}
				i++
			}
			continue
		}
		switch v {
		case "send-keys", "send", "send-prefix", "pipe-pane", "pipep":
			a.setCode(idx, CodeInline)
			return
		case "new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane", "respawnp",
			"respawn-window", "respawnw", "run-shell", wRun, "if-shell", "if", "display-popup", "popup":
			// Options (some with values) then the command's words.
			vals := tmuxValueOpts[v]
			rest := args[i+1:]
			j := 0
			for j < len(rest) && !rest[j].Dynamic && strings.HasPrefix(rest[j].Value, "-") && len(rest[j].Value) > 1 {
				o := rest[j].Value
				if o == "--" {
					j++
					break
				}
				last := o[len(o)-1]
				if strings.IndexByte(vals, last) >= 0 && !strings.HasPrefix(o, "--") {
					j++ // the last letter of the cluster takes the next word
				}
				j++
			}
			if j < len(rest) {
				if v == "if-shell" || v == "if" {
					// if-shell COND THEN [ELSE]: each is a command.
					for _, w := range rest[j:] {
						a.shellString(c, idx, w, "tmux "+v, nil)
					}
				} else {
					a.shellString(c, idx, joinWords(rest[j:]), "tmux "+v, nil)
				}
			}
			return
		}
		return // another subcommand
	}
}

// tmuxValueOpts lists, per tmux subcommand, the options that take a value.
var tmuxValueOpts = map[string]string{
	"new-session": "cefFnstxy", "new": "cefFnstxy",
	"new-window": "cefFnt", "neww": "cefFnt",
	"split-window": "celFpt", "splitw": "celFpt",
	"respawn-pane": "cet", "respawnp": "cet", "respawn-window": "cet", "respawnw": "cet",
	"run-shell": "cdt", wRun: "cdt", "if-shell": "t", "if": "t",
	"display-popup": "bcdehsStTwxy", "popup": "bcdehsStTwxy",
}

var screenSpec = optSpec{shortVal: "cehpsSTt", shortNone: "aAdDfilLmOqrRUvxX"}

// screenCmd handles screen [options] [cmd [args]]; -X sends a command to a
// running session.
func (a *analyzer) screenCmd(c ctx, idx int, args []Word) {
	var r optScan
	screenSpec.scanInto(args, &r)
	a.scanFlags(idx, args, &r)
	if r.has("X") {
		a.setCode(idx, CodeInline) // a command for a running session
		return
	}
	for _, start := range append([]int{r.start}, r.alts...) {
		if start < len(args) {
			a.wrapped(c, idx, args[start:], "screen", c.stdin)
		}
	}
}

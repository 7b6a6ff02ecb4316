package shell

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Default limits, used for zero fields of Limits.
const (
	DefaultMaxBytes    = 64 << 10
	DefaultMaxDepth    = 4
	DefaultMaxCommands = 512
	DefaultMaxWords    = 4096
)

// Limits bound the analysis; zero (or negative) fields take the defaults.
type Limits struct {
	MaxBytes    int // longest source, and longest expanded word (default 64 KiB)
	MaxDepth    int // nesting of sh -c / eval / su -c / alias / trap strings (default 4)
	MaxCommands int // commands reported (default 512)
	MaxWords    int // words after expansion, e.g. brace expansion (default 4096)
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxCommands <= 0 {
		l.MaxCommands = DefaultMaxCommands
	}
	if l.MaxWords <= 0 {
		l.MaxWords = DefaultMaxWords
	}
	return l
}

// Script is the result of Analyze: every simple command the source would run.
type Script struct {
	// Commands lists every simple command, in the order the shell would start
	// them (a command substitution's commands come before the command whose
	// words it is part of). Wrappers (sudo, env, xargs, find -exec, sh -c, ...)
	// are Commands, and so are the commands they run.
	Commands []Command
	// Pipelines has one entry for each pipeline of two or more stages: the
	// indexes into Commands of every command attached to the pipeline's
	// pipes, in pipe order (for a | sudo b: a, sudo, b).
	Pipelines [][]int
	// Redirects lists every redirection in the script, once each, in source
	// order, including those on statements that are not simple commands
	// (">file" alone, "{ ...; } >file", "(( x )) >file").
	Redirects []Redirect
	// Assignments lists every variable assignment: shell variables, prefix
	// assignments (FOO=x cmd) and env's NAME=value arguments.
	Assignments []Assignment

	// stages holds, for each pipeline, the commands of each stage.
	stages [][]stageRange
}

// Assignment is one variable assignment seen in the script.
type Assignment struct {
	Name  string
	Value Word
	// Cmd is the index in Script.Commands of the command the assignment is
	// exported to (FOO=x cmd, env FOO=x cmd), or -1 for a shell variable.
	Cmd int
}

// Command is one simple command.
type Command struct {
	// Name is the program name: directory stripped, quoting and escapes
	// resolved, ASCII letters folded to lower case, a trailing ".exe"
	// removed. "" when Dynamic.
	Name string
	// Program is the resolved program word before stripping the directory.
	Program string
	// Args are the arguments after the program, as the shell would pass them.
	Args []Word
	// Flags is the normalized flag set, sorted and deduplicated (see doc.go).
	Flags []string
	// Positionals are the Args that are neither flags nor the value of a
	// --name=value flag nor the "--" terminator. For wrappers (sudo, env,
	// nice, xargs, ...) the wrapped command's words are all positionals.
	Positionals []Word
	// Redirects are the redirections that apply to this command, including
	// those of enclosing compound statements and of its wrappers.
	Redirects []Redirect
	// Wrappers are the commands this one was run through, outermost first:
	// ["sudo","env"] for `sudo env rm x`, ["bash"] for `bash -c "rm x"`.
	Wrappers []string
	// Via says how the command was reached when not directly: "bash -c",
	// "eval", "su -c", "xargs", "find -exec", "find -delete", "alias",
	// "watch", "ssh", "trap", "bash <<<", ... ("" otherwise).
	Via string
	// Code reports code execution the analysis cannot see into.
	Code CodeKind
	// Depth is the nesting depth of -c / eval / ... strings (0 at top level).
	Depth int
	// Parent is the index in Script.Commands of the command that ran this one
	// (the wrapper, the shell given -c, xargs, find), or -1.
	Parent int

	scope int32 // pipe scope (see stageRange)
	// Dynamic reports that the program word is not statically known (unknown
	// variable, substitution, glob characters). It is declared last so that
	// it shares a word with scope.
	Dynamic bool
}

// Word is one expanded word.
//
// The fields are ordered so that the struct has no padding between the
// strings (40 bytes): Args and Positionals hold many of them.
type Word struct {
	// Value is the resolved text. A leading "~", "$HOME" or "${HOME}" becomes
	// "~"; dynamic parts are rendered as "*".
	Value string
	// Pattern is a path.Match pattern the word's possible values match:
	// literal parts escaped with \, unquoted glob characters kept, dynamic
	// parts as "*". It is always valid; when Glob is false it matches Value
	// only.
	Pattern string
	// Dynamic reports that some part is not statically known (unknown
	// variable, $(...), $((...)), `...`, <(...)).
	Dynamic bool
	// Glob reports unquoted glob characters (* ? [ ]) or dynamic parts.
	Glob bool

	procSubst bool // the word is a <(...) or >(...) file name
	zshQual   bool // an extended glob that would be a zsh glob qualifier running code
}

// Redirect is one redirection.
type Redirect struct {
	// Op is the operator: ">", ">>", "<", "&>", "&>>", ">|", "<>", "<&",
	// ">&", "<<", "<<-", "<<<"; or a find primary ("-fprint", ...) and
	// "-o" for time/script output files.
	Op string
	// FD is the file descriptor redirected (1 for ">", 0 for "<"), or -1 for
	// {var}> forms.
	FD int
	// Target is the file; for "<<", "<<-" and "<<<" it is the document text,
	// for descriptor duplications ("2>&1") it is "&1" (or "&-").
	Target Word
	// Write reports that Target is opened for writing.
	Write bool
}

// CodeKind classifies code execution the analysis cannot see into.
type CodeKind int

const (
	// CodeNone means no hidden code.
	CodeNone CodeKind = iota
	// CodeInline marks an interpreter given a program text on the command line
	// (python -c, node -e, perl -e, awk programs calling system(), sed's e
	// command, ...).
	CodeInline
	// CodePiped marks an interpreter or shell reading its program from stdin or
	// from a process substitution (curl x | sh, python -, sh < file).
	CodePiped
	// CodeDynamic marks sh -c / eval / su -c / ... whose string is not statically
	// known, or an interpreter whose options are not.
	CodeDynamic
)

// String returns a short description for messages.
func (k CodeKind) String() string {
	switch k {
	case CodeNone:
		return "none"
	case CodeInline:
		return "inline code"
	case CodePiped:
		return "code read from stdin"
	case CodeDynamic:
		return "dynamic code"
	}
	return fmt.Sprintf("CodeKind(%d)", int(k))
}

// ErrLimit is wrapped by every error that reports an exceeded limit.
var ErrLimit = errors.New("limit exceeded")

// parserPool holds reusable parsers: a syntax.Parser may be reused but not
// shared concurrently.
var parserPool = sync.Pool{New: func() any {
	return &parserState{p: newFullParser()}
}}

func newFullParser() *syntax.Parser { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }

type parserState struct {
	p        *syntax.Parser
	rd       strings.Reader
	fast     fastParser
	noFast   bool        // tests: always use the full parser
	bufs     scratchBufs // reused analysis buffers
	builders []*wbuilder // reused word builders
	an       analyzer    // reused analyzer state
	env      env         // reused top-level variables
}

func (ps *parserState) parse(src string, top bool) (*syntax.File, error) {
	if !ps.noFast {
		if f, ok := ps.fast.parse(src, top); ok {
			return f, nil // the fast subset has no nesting
		}
	}
	if err := checkNesting(src); err != nil {
		return nil, err
	}
	return ps.fullParse(src)
}

// fullParse parses src with mvdan.cc/sh.
func (ps *parserState) fullParse(src string) (*syntax.File, error) {
	ps.rd.Reset(src)
	f, err := ps.p.Parse(&ps.rd, "")
	ps.rd.Reset("")
	return f, err
}

// Analyze parses src (bash syntax) and returns every simple command it would
// run. A string that does not parse or exceeds a limit returns an error, never
// a panic.
func Analyze(src string, lim Limits) (s *Script, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("shell: internal error analysing command: %v", r)
		}
	}()
	return analyze(src, lim)
}

// analyze is Analyze without the recover, so that fuzzing sees panics.
func analyze(src string, lim Limits) (*Script, error) {
	ps := parserPool.Get().(*parserState)
	defer parserPool.Put(ps)
	return analyzeWith(ps, src, lim)
}

func analyzeWith(ps *parserState, src string, lim Limits) (*Script, error) {
	lim = lim.withDefaults()
	if len(src) > lim.MaxBytes {
		return nil, fmt.Errorf("shell: command is %d bytes, more than %d: %w", len(src), lim.MaxBytes, ErrLimit)
	}
	f, err := ps.parse(src, true)
	if err != nil {
		if errors.Is(err, ErrLimit) {
			return nil, err
		}
		return nil, fmt.Errorf("shell: parse: %w", err)
	}
	a := &ps.an
	*a = analyzer{lim: lim, ps: ps, out: &Script{}, bufs: ps.bufs}
	defer func() {
		ps.bufs = a.bufs.reset()
		*a = analyzer{}
	}()
	a.parsed = len(src)
	var est sizes
	if f == &ps.fast.file {
		// The fast parser counted the commands, words and redirections; one
		// more command for a wrapper's (sudo x, xargs x): in the guard corpus
		// fewer than 2% of fast-parsed commands need more.
		sz := ps.fast.size
		est = sizes{cmds: sz.calls + 1, words: sz.words + sz.words/4 + 4, flags: strings.Count(src, "-") + 4, redirs: sz.redirs}
	} else {
		est = estimate(src)
	}
	a.out.Commands = make([]Command, 0, min(est.cmds, lim.MaxCommands))
	a.wslab = make([]Word, 0, min(est.words, 256))
	a.sslab = make([]string, 0, min(est.flags, 128))
	if nr := min(est.redirs, 32); nr > 0 {
		// Script.Redirects and the commands' Redirects share one slab.
		rs := make([]Redirect, 0, 2*nr)
		a.out.Redirects, a.rslab = rs[:0:nr], rs[nr:nr]
	}
	clear(ps.env.vars)
	ps.env = env{vars: ps.env.vars}
	c := ctx{env: &ps.env, parent: -1}
	a.stmts(c, f.Stmts)
	if a.err != nil {
		return nil, a.err
	}
	a.out.stages, a.out.Pipelines = a.pipelines()
	if len(a.out.Redirects) == 0 {
		a.out.Redirects = nil // as when none was appended
	}
	return a.out, nil
}

// MaxNesting bounds how deeply brackets may nest in a source string, and
// MaxOpeners how many opening brackets it may have. The parser's cost grows
// faster than linearly with nesting (most on input that does not parse),
// and no real command comes near either bound. The depth count can be
// fooled (a case pattern's ")" looks like a closing bracket), so the total
// caps the real depth too.
const (
	MaxNesting = 256
	MaxOpeners = 2048
)

// checkNesting enforces MaxNesting and MaxOpeners, outside single quotes
// and comments; inside double quotes a ")" never closes (the conservative
// side).
func checkNesting(src string) error {
	depth, maxDepth, total := 0, 0, 0
	dq := false
	wordStart := true
	for i := 0; i < len(src); i++ {
		c := src[i]
		ws := wordStart
		wordStart = false
		switch c {
		case '\\':
			i++
		case '\'':
			if !dq {
				if j := strings.IndexByte(src[i+1:], '\''); j >= 0 {
					i += j + 1
				} else {
					i = len(src)
				}
			}
		case '"':
			dq = !dq
		case '#':
			if ws && !dq {
				for i < len(src) && src[i] != '\n' {
					i++
				}
				wordStart = true
			}
		case '(', '{', '[', '`':
			depth++
			total++
			maxDepth = max(maxDepth, depth)
			wordStart = c != '`'
		case ')', '}', ']':
			if depth > 0 && !dq {
				depth--
			}
		case ' ', '\t', '\n', ';', '|', '&', '<', '>':
			wordStart = true
		}
	}
	if maxDepth > MaxNesting || total > MaxOpeners {
		return fmt.Errorf("shell: brackets nest deeper than %d or number more than %d: %w", MaxNesting, MaxOpeners, ErrLimit)
	}
	return nil
}

// sizes are guesses of how big an analysis' result will be, to size its
// slices once.
type sizes struct {
	cmds, words, flags, redirs int
}

// estimate guesses the sizes of src's analysis from its bytes: a command
// per separator, a word per blank, a flag per dash, a redirection per
// angle bracket.
func estimate(src string) sizes {
	seps := 0
	for _, c := range [...]string{"|", ";", "&", "\n", "(", "`"} {
		seps += strings.Count(src, c)
	}
	words := strings.Count(src, " ") + strings.Count(src, "\t")
	return sizes{
		cmds:   seps + 3,
		words:  words + words/4 + 4,
		flags:  strings.Count(src, "-") + 4,
		redirs: strings.Count(src, ">") + strings.Count(src, "<"),
	}
}

// pipelines builds Script.stages and Script.Pipelines from the pipelines
// recorded during the walk: for each, the commands of its stages in order.
func (a *analyzer) pipelines() ([][]stageRange, [][]int) {
	pipes := a.bufs.pipes
	if len(pipes) == 0 {
		return nil, nil
	}
	cmds := a.out.Commands
	nr, n := 0, 0
	for _, p := range pipes {
		nr += p.n
		for _, r := range a.bufs.stages[p.off : p.off+p.n] {
			n += int(r.hi - r.lo)
		}
	}
	ranges := make([]stageRange, 0, nr)
	stages := make([][]stageRange, len(pipes))
	flat := make([]int, 0, n)
	out := make([][]int, len(pipes))
	for i, p := range pipes {
		rs := a.bufs.stages[p.off : p.off+p.n]
		r0 := len(ranges)
		ranges = append(ranges, rs...)
		stages[i] = ranges[r0:len(ranges):len(ranges)]
		start := len(flat)
		for _, r := range rs {
			for j := r.lo; j < r.hi; j++ {
				if cmds[j].scope == r.scope {
					flat = append(flat, int(j))
				}
			}
		}
		out[i] = flat[start:len(flat):len(flat)]
	}
	return stages, out
}

package shell

import (
	"slices"
	"strings"
)

// flagAliases maps, per program, spellings of a flag to its canonical name.
// Long options are keyed without their dashes.
var flagAliases = map[string]map[string]string{
	"rm":     {wRecursive: "r", "R": "r", wForce: "f", wInteractive: "i", "dir": "d", wVerbose: "v"},
	"cp":     {wRecursive: "r", "R": "r", wForce: "f", "archive": "a", wInteractive: "i", "no-clobber": "n", wVerbose: "v"},
	"mv":     {wForce: "f", wInteractive: "i", "no-clobber": "n", wVerbose: "v"},
	"chmod":  {wRecursive: "R", "changes": "c", "silent": "f", wQuiet: "f", wVerbose: "v"},
	"chown":  {wRecursive: "R", "changes": "c", "silent": "f", wQuiet: "f", wVerbose: "v"},
	"chgrp":  {wRecursive: "R", "changes": "c", "silent": "f", wQuiet: "f", wVerbose: "v"},
	wGit:     {wForce: "f"},
	"docker": {wForce: "f"},
	"podman": {wForce: "f"},
	"ln":     {wForce: "f", "symbolic": "s"},
	"rmdir":  {"parents": "p"},
	"shred":  {wForce: "f", "remove": "u", "zero": "z"},
	wKubectl: {},
	"helm":   {},
}

// implied lists flags that imply others (cp -a is -dR --preserve=all).
var implied = map[string]map[string][]string{
	"cp": {"a": {"r"}},
}

// chmodFlags are chmod/chown/chgrp's option letters; other dash words are
// modes (chmod -w file).
const chmodFlags = "cfvRhHLP"

// singleDash lists programs whose single-dash words are whole options
// (find -delete, not -d -e -l ...).
var singleDash = map[string]bool{"find": true, "java": true, "gfind": true, "bfs": true, "pwsh": true, wPowershell: true}

// oneChar holds one-byte strings so that splitting clusters does not
// allocate.
const oneChar = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f" +
	"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f" +
	" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\x7f"

func char(c byte) string {
	if c < 0x80 {
		return oneChar[c : c+1]
	}
	return string([]byte{c})
}

// normalizeFlags splits args into normalized flags and positionals:
// "-rf" and "-r -f" give [f r]; "--x=v" gives "x"; aliases map per program
// (rm --recursive → r). Words after "--" are positionals; dynamic words are
// positionals.
func normalizeFlags(a *analyzer, name string, kind progKind, args []Word) ([]string, []Word) {
	fc := countFlags(name, args)
	if fc.nf == 1 && !fc.dd {
		// No flags.
		if name == wGit {
			return gitPushPlus(nil, args), args
		}
		return nil, args
	}
	fn := flagNorm{
		flags:      a.stringsN(fc.nf),
		contiguous: fc.contiguous(),
		singleDash: kind&kindSingleDash != 0,
		chmodLike:  name == "chmod" || name == "chown" || name == "chgrp",
	}
	if kind&kindFlagAliases != 0 {
		fn.aliases = flagAliases[name]
	}
	if !fn.contiguous {
		fn.pos = a.wordsN(len(args))
	}
	if name == "cp" {
		fn.imp = implied[name]
	}
	fn.special = fn.aliases != nil || fn.imp != nil
	for i, w := range args {
		v := w.Value
		if w.Dynamic || len(v) < 2 || v[0] != '-' {
			fn.addPos(w)
			continue
		}
		if v == "--" {
			fn.addPos(args[i+1:]...)
			break
		}
		fn.option(w)
	}
	pos := fn.pos
	if fn.contiguous && fc.count > 0 {
		pos = args[fc.first : fc.last+1 : fc.last+1]
	}
	flags := fn.flags
	if name == wGit {
		flags = gitPushPlus(flags, pos)
	}
	if len(flags) == 0 {
		flags = nil
	}
	return sortDedup(flags), pos
}

// flagCount is normalizeFlags' first pass: it counts flag letters, and sees
// whether the positionals are one run of args (then Positionals shares Args'
// memory).
type flagCount struct {
	nf                 int // flag letters, plus one
	first, last, count int // the first and last positional, and how many
	dd                 bool
}

func countFlags(name string, args []Word) flagCount {
	fc := flagCount{nf: 1, first: -1, last: -1}
	for i, w := range args {
		if v := w.Value; !fc.dd && !w.Dynamic && len(v) > 1 && v[0] == '-' && !chmodLikeMode(name, v) {
			if v == "--" {
				fc.dd = true
			} else if v[1] == '-' {
				fc.nf++
			} else {
				fc.nf += len(v) - 1
			}
			continue
		}
		if fc.first < 0 {
			fc.first = i
		}
		fc.last = i
		fc.count++
	}
	return fc
}

// contiguous reports whether the positionals are one run of args.
func (fc flagCount) contiguous() bool {
	return fc.count == 0 || fc.count == fc.last-fc.first+1
}

// flagNorm collects normalizeFlags' flags and positionals.
type flagNorm struct {
	flags      []string
	pos        []Word // only when the positionals are not contiguous
	aliases    map[string]string
	imp        map[string][]string
	special    bool // aliases or imp are set
	contiguous bool
	singleDash bool
	chmodLike  bool
}

// add adds flag f, through the aliases, with the flags it implies.
func (fn *flagNorm) add(f string) {
	if fn.aliases != nil {
		if a, ok := fn.aliases[f]; ok {
			f = a
		}
	}
	fn.flags = append(fn.flags, f)
	if fn.imp != nil {
		fn.flags = append(fn.flags, fn.imp[f]...)
	}
}

// addPos adds positionals when they are not contiguous.
func (fn *flagNorm) addPos(w ...Word) {
	if !fn.contiguous {
		fn.pos = append(fn.pos, w...)
	}
}

// option adds the flags of an option word (not "--").
func (fn *flagNorm) option(w Word) {
	v := w.Value
	switch {
	case v[1] == '-':
		n, _, _ := strings.Cut(v[2:], "=")
		fn.add(n)
	case fn.singleDash:
		fn.add(v[1:])
	case isDigits(v[1:]):
		fn.add(v[1:]) // head -20, kill -9
	case fn.chmodLike && strings.Trim(v[1:], chmodFlags) != "":
		fn.addPos(w) // a mode like -w or -rwx
	case fn.special:
		for j := 1; j < len(v); j++ {
			fn.add(char(v[j]))
		}
	default:
		for j := 1; j < len(v); j++ {
			fn.flags = append(fn.flags, char(v[j]))
		}
	}
}

// chmodLikeMode reports a chmod-style mode word (-w, -rwx), which is a
// positional.
func chmodLikeMode(name, v string) bool {
	return (name == "chmod" || name == "chown" || name == "chgrp") && len(v) > 1 && v[1] != '-' &&
		!isDigits(v[1:]) && strings.Trim(v[1:], chmodFlags) != ""
}

// gitPushPlus adds f for git push +refspec, which forces.
func gitPushPlus(flags []string, pos []Word) []string {
	if len(pos) < 2 {
		return flags
	}
	push := -1
	for i, w := range pos {
		if w.Value == "push" {
			push = i
			break
		}
	}
	if push < 0 {
		return flags
	}
	for _, w := range pos[push+1:] {
		if strings.HasPrefix(w.Value, "+") || strings.Contains(w.Value, ":+") {
			return sortDedup(append(flags, "f"))
		}
	}
	return flags
}

func sortDedup(s []string) []string {
	if len(s) < 2 {
		return s
	}
	// Insertion sort: flag sets are small.
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return slices.Compact(s)
}

package shell

import (
	"slices"
	"strings"
)

// flagAliases lists, per program, spellings of a flag and their canonical
// name. Long options are keyed without their dashes.
var flagAliases = map[string][]flagAlias{
	"rm":     {{wRecursive, "r"}, {"R", "r"}, {wForce, "f"}, {wInteractive, "i"}, {"dir", "d"}, {wVerbose, "v"}},
	"cp":     {{wRecursive, "r"}, {"R", "r"}, {wForce, "f"}, {"archive", "a"}, {wInteractive, "i"}, {"no-clobber", "n"}, {wVerbose, "v"}},
	"mv":     {{wForce, "f"}, {wInteractive, "i"}, {"no-clobber", "n"}, {wVerbose, "v"}},
	"chmod":  {{wRecursive, "R"}, {"changes", "c"}, {"silent", "f"}, {wQuiet, "f"}, {wVerbose, "v"}},
	"chown":  {{wRecursive, "R"}, {"changes", "c"}, {"silent", "f"}, {wQuiet, "f"}, {wVerbose, "v"}},
	"chgrp":  {{wRecursive, "R"}, {"changes", "c"}, {"silent", "f"}, {wQuiet, "f"}, {wVerbose, "v"}},
	wGit:     {{wForce, "f"}},
	"docker": {{wForce, "f"}},
	"podman": {{wForce, "f"}},
	"ln":     {{wForce, "f"}, {"symbolic", "s"}},
	"rmdir":  {{"parents", "p"}},
	"shred":  {{wForce, "f"}, {"remove", "u"}, {"zero", "z"}},
	wKubectl: {},
	"helm":   {},
}

// flagAlias is one spelling of a flag and its canonical name.
type flagAlias struct{ from, to string }

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
// positionals. When the positionals are one run of args, they share its
// memory.
func normalizeFlags(a *analyzer, name string, info *progInfo, args []Word) ([]string, []Word) {
	fn := flagNorm{
		flags:      a.bufs.flags[:0],
		singleDash: info.kind&kindSingleDash != 0,
		chmodLike:  info.kind&kindChmod != 0,
		first:      -1,
	}
	if info.kind&kindFlagAliases != 0 {
		fn.aliases = info.aliases
		fn.cp = name == "cp"
	}
	for i, w := range args {
		v := w.Value
		if w.Dynamic || len(v) < 2 || v[0] != '-' {
			fn.addPos(a, args, i)
			continue
		}
		if v == "--" {
			for j := i + 1; j < len(args); j++ {
				fn.addPos(a, args, j)
			}
			break
		}
		fn.option(a, args, i)
	}
	a.bufs.flags = fn.flags[:0]
	var pos []Word
	switch {
	case fn.split:
		pos = a.wordsN(len(a.bufs.pos))
		pos = append(pos, a.bufs.pos...)
		a.bufs.pos = a.bufs.pos[:0] // cleared by scratchBufs.reset
	case fn.first >= 0:
		pos = args[fn.first:fn.last:fn.last]
	}
	flags := fn.flags
	if name == wGit {
		flags = gitPushPlus(flags, pos)
	}
	if len(flags) == 0 {
		return nil, pos
	}
	flags = sortDedup(flags)
	out := a.stringsN(len(flags))
	return append(out, flags...), pos
}

// flagNorm collects normalizeFlags' flags (in analyzer.bufs.flags) and
// positionals: args[first:last] while they are one run, then (split) in
// analyzer.bufs.pos.
type flagNorm struct {
	flags       []string
	aliases     []flagAlias
	first, last int
	split       bool
	cp          bool // cp: -a implies -r
	singleDash  bool
	chmodLike   bool
}

// add adds flag f, through the aliases, with the flags it implies.
func (fn *flagNorm) add(f string) {
	for _, al := range fn.aliases {
		if al.from == f {
			f = al.to
			break
		}
	}
	fn.flags = append(fn.flags, f)
	if fn.cp && f == "a" {
		fn.flags = append(fn.flags, "r") // cp -a is -dR --preserve=all
	}
}

// addPos adds args[i] to the positionals.
func (fn *flagNorm) addPos(a *analyzer, args []Word, i int) {
	switch {
	case fn.split:
		a.bufs.pos = append(a.bufs.pos, args[i])
	case fn.first < 0:
		fn.first, fn.last = i, i+1
	case fn.last == i:
		fn.last++
	default:
		// A gap: the positionals are no longer one run of args.
		fn.split = true
		a.bufs.pos = append(a.bufs.pos[:0], args[fn.first:fn.last]...)
		a.bufs.pos = append(a.bufs.pos, args[i])
	}
}

// option adds the flags of the option word args[i] (not "--").
func (fn *flagNorm) option(a *analyzer, args []Word, i int) {
	v := args[i].Value
	switch {
	case v[1] == '-':
		n, _, _ := strings.Cut(v[2:], "=")
		fn.add(n)
	case fn.singleDash:
		fn.add(v[1:])
	case isDigits(v[1:]):
		fn.add(v[1:]) // head -20, kill -9
	case fn.chmodLike && strings.Trim(v[1:], chmodFlags) != "":
		fn.addPos(a, args, i) // a mode like -w or -rwx
	case fn.aliases != nil || fn.cp:
		for j := 1; j < len(v); j++ {
			fn.add(char(v[j]))
		}
	default:
		for j := 1; j < len(v); j++ {
			fn.flags = append(fn.flags, char(v[j]))
		}
	}
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

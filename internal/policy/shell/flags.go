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
	var aliases map[string]string
	if kind&kindFlagAliases != 0 {
		aliases = flagAliases[name]
	}
	// First pass: count flag letters, and see whether the positionals are
	// one run of args (then Positionals shares Args' memory).
	nf, first, last, count, dd := 1, -1, -1, 0, false
	for i, w := range args {
		if v := w.Value; !dd && !w.Dynamic && len(v) > 1 && v[0] == '-' && !chmodLikeMode(name, v) {
			if v == "--" {
				dd = true
			} else if v[1] == '-' {
				nf++
			} else {
				nf += len(v) - 1
			}
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		count++
	}
	contiguous := count == 0 || count == last-first+1
	if nf == 1 && !dd {
		// No flags.
		if name == wGit {
			return gitPushPlus(nil, args), args
		}
		return nil, args
	}
	flags := a.stringsN(nf)
	var pos []Word
	if !contiguous {
		pos = a.wordsN(len(args))
	}
	var imp map[string][]string
	if name == "cp" {
		imp = implied[name]
	}
	special := aliases != nil || imp != nil
	add := func(f string) {
		if aliases != nil {
			if a, ok := aliases[f]; ok {
				f = a
			}
		}
		flags = append(flags, f)
		if imp != nil {
			flags = append(flags, imp[f]...)
		}
	}
	chmodLike := name == "chmod" || name == "chown" || name == "chgrp"
	for i, w := range args {
		v := w.Value
		if w.Dynamic || len(v) < 2 || v[0] != '-' {
			if !contiguous {
				pos = append(pos, w)
			}
			continue
		}
		if v == "--" {
			if !contiguous {
				pos = append(pos, args[i+1:]...)
			}
			break
		}
		if v[1] == '-' {
			n, _, _ := strings.Cut(v[2:], "=")
			add(n)
			continue
		}
		if kind&kindSingleDash != 0 {
			add(v[1:])
			continue
		}
		if isDigits(v[1:]) {
			add(v[1:]) // head -20, kill -9
			continue
		}
		if chmodLike && strings.Trim(v[1:], chmodFlags) != "" {
			if !contiguous {
				pos = append(pos, w) // a mode like -w or -rwx
			}
			continue
		}
		if special {
			for j := 1; j < len(v); j++ {
				add(char(v[j]))
			}
		} else {
			for j := 1; j < len(v); j++ {
				flags = append(flags, char(v[j]))
			}
		}
	}
	if contiguous && count > 0 {
		pos = args[first : last+1 : last+1]
	}
	if name == wGit {
		flags = gitPushPlus(flags, pos)
	}
	if len(flags) == 0 {
		flags = nil
	}
	return sortDedup(flags), pos
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
